//! A private 3-master Redis Cluster for a test, on loopback: three
//! `redis-server --cluster-enabled yes` processes joined by
//! `redis-cli --cluster create`, killed on drop. A test that starts one
//! carries `#[needs(redis)]`.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::process::{free_port, require_programs};
use crate::redis::{RedisServer, INSTALL};

/// Three masters sharing the 16384 slots.
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts and joins the cluster, and waits until every node says
    /// `cluster_state:ok`.
    pub fn start() -> RedisCluster {
        require_programs(&["redis-server", "redis-cli"], INSTALL);
        let mut nodes = Vec::new();
        for _ in 0..3 {
            // The bus port is set explicitly: port + 10000 may not exist.
            let bus = free_port().to_string();
            let args = [
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-port",
                &bus,
                "--cluster-node-timeout",
                "2000",
            ];
            nodes.push(RedisServer::start_with(&args));
        }
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port()))
            .collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli --cluster create");
        assert!(
            out.status.success(),
            "cluster create failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let cluster = RedisCluster { nodes };
        cluster.wait_until_ok();
        cluster
    }

    fn wait_until_ok(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        for node in &self.nodes {
            loop {
                let info = Command::new("redis-cli")
                    .args(["-h", "127.0.0.1", "-p", &node.port().to_string()])
                    .args(["cluster", "info"])
                    .output()
                    .expect("redis-cli cluster info");
                if String::from_utf8_lossy(&info.stdout).contains("cluster_state:ok") {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "cluster node {} never reached cluster_state:ok",
                    node.port()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }

    /// The nodes' URLs (`redis://127.0.0.1:<port>`).
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }
}
