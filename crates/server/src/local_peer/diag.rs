//! One socket's inode from the kernel's socket table, by its exact
//! addresses: `NETLINK_SOCK_DIAG` with an `inet_diag_req_v2` naming both
//! ends (no dump: the kernel looks the socket up in its hash table).

use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const INET_DIAG_NOCOOKIE: u32 = !0;
/// `nlmsghdr` (16) + `inet_diag_req_v2` (8 + `inet_diag_sockid` 48).
const REQUEST_LEN: usize = 72;
/// Where `idiag_inode` sits in the answer: header, then 4 bytes of
/// family/state/timer/retrans, the 48-byte sockid, expires, rqueue,
/// wqueue and uid.
const INODE_AT: usize = 16 + 4 + 48 + 16;

/// `Ok(None)`: no such socket (closed meanwhile, or only a time-wait
/// left). `Err`: sock_diag is not available here.
pub fn inode(local: SocketAddr, remote: SocketAddr) -> Result<Option<u64>, String> {
    let (local, remote) = (canon(local), canon(remote));
    let family = match (local.ip(), remote.ip()) {
        (IpAddr::V4(_), IpAddr::V4(_)) => libc::AF_INET,
        (IpAddr::V6(_), IpAddr::V6(_)) => libc::AF_INET6,
        _ => return Ok(None),
    };
    let mut req = [0u8; REQUEST_LEN];
    req[0..4].copy_from_slice(&(REQUEST_LEN as u32).to_ne_bytes());
    req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    req[6..8].copy_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    req[8..12].copy_from_slice(&1u32.to_ne_bytes());
    req[16] = family as u8;
    req[17] = libc::IPPROTO_TCP as u8;
    req[20..24].copy_from_slice(&u32::MAX.to_ne_bytes());
    // inet_diag_sockid: ports and addresses in network byte order.
    req[24..26].copy_from_slice(&local.port().to_be_bytes());
    req[26..28].copy_from_slice(&remote.port().to_be_bytes());
    put_ip(&mut req[28..44], local.ip());
    put_ip(&mut req[44..60], remote.ip());
    req[64..68].copy_from_slice(&INET_DIAG_NOCOOKIE.to_ne_bytes());
    req[68..72].copy_from_slice(&INET_DIAG_NOCOOKIE.to_ne_bytes());

    // SAFETY: plain syscalls on a descriptor this function owns; every
    // buffer passed outlives the call and its length is its own.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return Err(format!(
            "netlink socket: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let timeout = libc::timeval {
        tv_sec: 2,
        tv_usec: 0,
    };
    let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    let mut buf = [0u8; 512];
    // SAFETY: see above.
    let received = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            &timeout as *const libc::timeval as *const libc::c_void,
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
        let sent = libc::sendto(
            fd.as_raw_fd(),
            req.as_ptr() as *const libc::c_void,
            req.len(),
            0,
            &kernel as *const libc::sockaddr_nl as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        );
        if sent != req.len() as isize {
            return Err(format!("netlink send: {}", std::io::Error::last_os_error()));
        }
        libc::recv(
            fd.as_raw_fd(),
            buf.as_mut_ptr() as *mut libc::c_void,
            buf.len(),
            0,
        )
    };
    if received < 0 {
        return Err(format!("netlink recv: {}", std::io::Error::last_os_error()));
    }
    parse_answer(&buf[..received as usize])
}

pub(super) fn parse_answer(answer: &[u8]) -> Result<Option<u64>, String> {
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(answer.get(at..at + 4)?.try_into().ok()?))
    };
    let kind = answer
        .get(4..6)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .ok_or("short netlink answer")?;
    match kind {
        NLMSG_ERROR => {
            let errno = -(word(16).ok_or("short netlink error")? as i32);
            if errno == libc::ENOENT {
                Ok(None)
            } else {
                Err(format!(
                    "sock_diag: {}",
                    std::io::Error::from_raw_os_error(errno)
                ))
            }
        }
        SOCK_DIAG_BY_FAMILY => {
            let inode = word(INODE_AT).ok_or("short sock_diag answer")?;
            Ok((inode != 0).then_some(inode as u64))
        }
        other => Err(format!("unexpected netlink message type {other}")),
    }
}

fn canon(addr: SocketAddr) -> SocketAddr {
    match addr.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), addr.port()),
            None => addr,
        },
        IpAddr::V4(_) => addr,
    }
}

fn put_ip(out: &mut [u8], ip: IpAddr) {
    match ip {
        IpAddr::V4(v4) => out[..4].copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => out.copy_from_slice(&v6.octets()),
    }
}
