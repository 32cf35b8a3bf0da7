# Rasterizes the favicon's paperclip (crates/web/assets/favicon.svg) into the
# web app icons: 192 and 512 px with rounded corners, and a maskable 512 px
# (full bleed, the clip inside the 80 % safe circle). One-off; outputs committed.
import math, struct, zlib

BG = (0x3b, 0x5b, 0xdb)
FG = (0xff, 0xff, 0xff)

def seg(px, py, ax, ay, bx, by):
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - ax - t * dx, py - ay - t * dy)

def arc(px, py, cx, cy, r, upper):
    inside = py <= cy if upper else py >= cy
    if inside:
        return abs(math.hypot(px - cx, py - cy) - r)
    return min(math.hypot(px - cx + r, py - cy), math.hypot(px - cx - r, py - cy))

def clip_dist(x, y):
    return min(
        seg(x, y, 11, 21, 11, 9.5),
        arc(x, y, 15, 9.5, 4, True),
        seg(x, y, 19, 9.5, 19, 20),
        arc(x, y, 16.8, 20, 2.2, False),
        seg(x, y, 14.6, 20, 14.6, 11),
    )

def rrect_dist(x, y, size, r):
    # signed distance to a rounded square [0,size]^2 (negative inside)
    qx = abs(x - size / 2) - (size / 2 - r)
    qy = abs(y - size / 2) - (size / 2 - r)
    return math.hypot(max(qx, 0), max(qy, 0)) + min(max(qx, qy), 0) - r

def render(px, maskable):
    rows = []
    unit = 32.0 / px  # svg units per pixel
    # maskable: the glyph shrunk to 70 % around the centre, background full bleed
    k = 0.7 if maskable else 1.0
    for j in range(px):
        row = bytearray([0])
        for i in range(px):
            x, y = (i + 0.5) * unit, (j + 0.5) * unit
            if maskable:
                bg_a = 1.0
            else:
                d = rrect_dist(x, y, 32, 7)
                bg_a = max(0.0, min(1.0, 0.5 - d / unit))
            gx, gy = (15 + (x - 16) / k, 14.4 + (y - 16) / k) if maskable else (x, y)
            d = (clip_dist(gx, gy) - 1.2) * k
            fg_a = max(0.0, min(1.0, 0.5 - d / unit)) * bg_a
            c = [round(BG[n] * (1 - fg_a) + FG[n] * fg_a) for n in range(3)]
            row += bytes(c + [round(255 * bg_a)])
        rows.append(bytes(row))
    return b"".join(rows)

def png(path, px, maskable):
    raw = render(px, maskable)
    def chunk(kind, data):
        c = struct.pack(">I", len(data)) + kind + data
        return c + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
    ihdr = struct.pack(">IIBBBBB", px, px, 8, 6, 0, 0, 0)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    open(path, "wb").write(data)

png("icon-192.png", 192, False)
png("icon-512.png", 512, False)
png("icon-maskable-512.png", 512, True)
