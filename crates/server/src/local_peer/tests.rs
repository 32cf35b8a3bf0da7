use super::imp::*;

#[test]
fn the_parent_is_read_past_a_command_name_with_parentheses() {
    assert_eq!(parse_ppid("42 (a) b) S 7 42 42 0"), Some(7));
}

#[test]
fn the_run_marker_is_an_exact_variable() {
    let env = b"HOME=/root\0XPAPERCLIP_RUN_ID=no\0PAPERCLIP_RUN_ID=run-1\0";
    assert_eq!(run_marker(env).as_deref(), Some("run-1"));
    assert_eq!(run_marker(b"PAPERCLIP_RUN_IDS=x\0"), None);
}

#[test]
fn an_established_client_socket_is_found_by_its_local_address() {
    let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
0: 0100007F:0C1C 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1\n\
1: 0100007F:D431 0100007F:0C1C 01 00000000:00000000 00:00000000 00000000     0        0 222 1\n\
2: 0100007F:0C1C 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 333 1\n";
    let peer = "127.0.0.1:54321".parse().unwrap();
    assert_eq!(find_inode(table, peer, None), Some(222));
    assert_eq!(
        find_inode(table, "127.0.0.1:1".parse().unwrap(), None),
        None
    );
    // The same local port connected elsewhere too (another process's
    // socket, listed first): the server's end tells them apart.
    let shared = format!(
        "{table}3: 0100007F:D431 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 444 1\n"
    );
    let shared = shared.replacen("1: 0100007F:D431", "9: 0100007F:D431", 1);
    let lines: Vec<&str> = shared.lines().collect();
    let reordered = [lines[0], lines[4], lines[1], lines[2], lines[3]].join("\n");
    assert_eq!(find_inode(&reordered, peer, None), Some(444));
    let server = "127.0.0.1:3100".parse().unwrap();
    assert_eq!(find_inode(&reordered, peer, Some(server)), Some(222));
}

fn connected() -> (
    std::net::TcpListener,
    std::net::TcpStream,
    std::net::TcpStream,
) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, peer) = listener.accept().unwrap();
    assert_eq!(peer, client.local_addr().unwrap());
    (listener, client, server)
}

fn run(id: &str, roots: &[u32]) -> super::RunProcesses {
    super::RunProcesses {
        run_id: id.into(),
        roots: roots.iter().map(|&p| (p, None)).collect(),
    }
}

#[test]
fn the_kernel_names_the_same_socket_as_proc_net() {
    let (_l, client, server) = connected();
    let peer = client.local_addr().unwrap();
    let ours = server.local_addr().unwrap();
    let exact = super::diag::inode(peer, ours).unwrap().unwrap();
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    assert_eq!(Some(exact), find_inode(&table, peer, Some(ours)));
    // Our own end is another socket; a port nobody uses is none.
    assert_ne!(super::diag::inode(ours, peer).unwrap(), Some(exact));
    let nobody = "127.0.0.1:1".parse().unwrap();
    assert_eq!(super::diag::inode(nobody, ours).unwrap(), None);
}

#[test]
fn a_netlink_error_is_no_socket_only_for_enoent() {
    let mut answer = vec![0u8; 20];
    answer[4..6].copy_from_slice(&2u16.to_ne_bytes());
    answer[16..20].copy_from_slice(&(-libc::ENOENT).to_ne_bytes());
    assert_eq!(super::diag::parse_answer(&answer), Ok(None));
    answer[16..20].copy_from_slice(&(-libc::EPERM).to_ne_bytes());
    assert!(super::diag::parse_answer(&answer).is_err());
}

#[test]
fn this_process_is_found_holding_its_own_connection() {
    let (_l, client, server) = connected();
    let peer = client.local_addr().unwrap();
    let ours = Some(server.local_addr().unwrap());
    // Not in a run: nothing to refuse.
    assert_eq!(
        super::run_of_peer(peer, ours, &[run("run-x", &[])]).unwrap(),
        None
    );
    // A run rooted at this very process holds it, by either lookup.
    let me = std::process::id();
    let runs = [run("run-x", &[]), run("run-me", &[me])];
    assert_eq!(
        super::run_of_peer(peer, ours, &runs).unwrap().as_deref(),
        Some("run-me")
    );
    // The /proc/net reading the lookup falls back on finds the same owner.
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let inode = find_inode(&table, peer, ours).unwrap();
    assert_eq!(
        owners(&[inode].into(), &runs)
            .unwrap()
            .get(&inode)
            .map(String::as_str),
        Some("run-me")
    );
    // A recorded root whose start time is not the process's is not it.
    let stale = super::RunProcesses {
        run_id: "old".into(),
        roots: vec![(me, Some(-1))],
    };
    assert_eq!(super::run_of_peer(peer, ours, &[stale]).unwrap(), None);
}

/// A child holding a connection, with `env` and nothing else.
fn child_connected(
    env: &[(&str, &str)],
) -> Option<(
    std::process::Child,
    std::net::SocketAddr,
    std::net::SocketAddr,
)> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let child = std::process::Command::new("/bin/bash")
        .env_clear()
        .envs(env.iter().copied())
        .arg("-c")
        .arg(format!("exec 3<>/dev/tcp/127.0.0.1/{port}; exec sleep 30"))
        .spawn()
        .ok()?;
    let (server, peer) = listener.accept().unwrap();
    Some((child, peer, server.local_addr().unwrap()))
}

#[test]
fn a_descendant_without_the_marker_belongs_to_its_run() {
    let Some((mut child, peer, ours)) = child_connected(&[]) else {
        return;
    };
    // Rooted at this process: the child (no marker at all) is in its tree.
    let me = std::process::id();
    let found = super::run_of_peer(peer, Some(ours), &[run("run-tree", &[me])]);
    // Rooted at the child itself.
    let direct = super::run_of_peer(peer, Some(ours), &[run("run-child", &[child.id()])]);
    // A live run that neither recorded nor marked it.
    let other = super::run_of_peer(peer, Some(ours), &[run("run-other", &[])]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(found.unwrap().as_deref(), Some("run-tree"));
    assert_eq!(direct.unwrap().as_deref(), Some("run-child"));
    assert_eq!(other.unwrap(), None);
}

#[test]
fn a_marked_child_not_recorded_yet_is_a_root() {
    let Some((mut child, peer, ours)) = child_connected(&[("PAPERCLIP_RUN_ID", "run-new")]) else {
        return;
    };
    let found = super::run_of_peer(peer, Some(ours), &[run("run-new", &[])]);
    let not_live = super::run_of_peer(peer, Some(ours), &[run("run-else", &[])]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(found.unwrap().as_deref(), Some("run-new"));
    assert_eq!(not_live.unwrap(), None);
}

#[tokio::test]
async fn the_pool_answers_and_an_empty_run_list_needs_no_lookup() {
    let (_l, client, server) = connected();
    let peer = client.local_addr().unwrap();
    let ours = Some(server.local_addr().unwrap());
    assert_eq!(
        super::resolve(peer, ours, vec![]).await,
        super::Verdict::Outside
    );
    let me = std::process::id();
    assert_eq!(
        super::resolve(peer, ours, vec![run("r", &[me])]).await,
        super::Verdict::Run("r".into())
    );
    let gone = "127.0.0.1:1".parse().unwrap();
    assert!(matches!(
        super::resolve(gone, ours, vec![run("r", &[me])]).await,
        super::Verdict::Unknown(_)
    ));
}

#[tokio::test]
async fn lookups_waiting_together_are_answered_together() {
    let held: Vec<_> = (0..40).map(|_| connected()).collect();
    let me = std::process::id();
    let asks = held.iter().enumerate().map(|(i, (_, client, server))| {
        // Half see a run rooted here, half only a run with no processes:
        // a batch answers each as strictly as the union of what they saw.
        let runs = if i % 2 == 0 {
            vec![run("r", &[me])]
        } else {
            vec![run("idle", &[])]
        };
        super::resolve(
            client.local_addr().unwrap(),
            Some(server.local_addr().unwrap()),
            runs,
        )
    });
    for verdict in futures::future::join_all(asks).await {
        assert!(
            matches!(verdict, super::Verdict::Run(ref r) if r == "r")
                || verdict == super::Verdict::Outside,
            "{verdict:?}"
        );
    }
}
