//! Session list benchmarks: a figures printer (`harness = false`).
//!
//! Run: `cargo bench --bench sessions` (needs `redis-server` and
//! `redis-benchmark` on the PATH for the Redis half; without them it prints
//! a note and measures the JSON list only).
//!
//! - JsonNetworkList: save (fsync included) and load of a 1 MB network;
//!   `list` of a page of 50 among 10,000 sessions (target <= 20 ms).
//! - RedisNetworkList (private `redis-server` on a free port): save and
//!   load of a 100 KB and a 1 MB network, one client, sequential, side by
//!   side with a raw `SET` / `GET` of the same bytes on the list's own
//!   `redis` crate connection (target: at least 90 % of their ops/s), and
//!   with `redis-benchmark -c 1 -t set,get -d <size>` on the same server
//!   (reported: the crate's own gap to it shows there); `list` of a page
//!   of 50 among 100,000 sessions (target <= 5 ms).
//! - The floor of a checked save: the same raw `SET` pipelined with the
//!   smallest script a revision check could be (one `RENAME` of the bytes
//!   into place). No save that refuses a stale copy atomically can cost
//!   less than this; the save is reported against it too.
//!
//! The networks are chains of human messages (no model involved).
#![allow(clippy::unwrap_used, unreachable_pub, missing_docs)] // criterion_group! declares an undocumented pub fn

use std::process::Command;
use std::time::{Duration, Instant};

use lc_agent::{HumanNode, RunnableNetwork, Saving};
use lc_agent::{JsonNetworkList, ListQuery, NetworkList, RedisConnector, RedisNetworkList};

/// A network whose saved JSON is about `bytes` long.
fn network_of(bytes: usize, rt: &tokio::runtime::Runtime) -> RunnableNetwork {
    let net = RunnableNetwork::builder()
        .name(format!("{bytes} bytes"))
        .build();
    let text = "lorem ipsum dolor sit amet ".repeat(160); // ~4.3 KB per message
    {
        let _s = net.enter();
        // Each invoked human node holds its text twice (field + output).
        for _ in 0..(bytes / (2 * text.len() + 400)).max(1) {
            HumanNode::new(text.clone());
        }
    }
    rt.block_on(net.invoke()).expect("invoke");
    net
}

struct Stats {
    median: Duration,
    mean: Duration,
}

impl Stats {
    fn of(mut samples: Vec<Duration>) -> Stats {
        let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
        samples.sort();
        Stats {
            median: samples[samples.len() / 2],
            mean,
        }
    }
}

fn measure(iters: usize, mut f: impl FnMut()) -> Stats {
    Stats::of(
        (0..iters)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

/// Times `iters` listings of the page of 50 at `offset`, checking its
/// length (and the total, when given).
fn page_times(
    rt: &tokio::runtime::Runtime,
    list: &dyn NetworkList,
    offset: usize,
    total: Option<usize>,
    iters: usize,
) -> Stats {
    measure(iters, || {
        let page = rt
            .block_on(list.list(&ListQuery {
                offset,
                limit: 50,
                ..ListQuery::default()
            }))
            .expect("list");
        assert_eq!(page.sessions.len(), 50);
        if let Some(total) = total {
            assert_eq!(page.total, total);
        }
    })
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn ops(d: Duration) -> f64 {
    1.0 / d.as_secs_f64()
}

fn main() {
    // `cargo test --benches` runs bench targets with `--bench` absent:
    // keep that cheap.
    if !std::env::args().any(|a| a == "--bench") {
        println!("sessions bench: run with `cargo bench --bench sessions`");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    json_figures(&rt);
    redis_figures(&rt);
}

fn json_figures(rt: &tokio::runtime::Runtime) {
    println!("== JsonNetworkList ==");
    let dir = tempfile::tempdir_in(std::env::var("BENCH_DIR").unwrap_or_else(|_| "target".into()))
        .expect("tempdir");
    let list = JsonNetworkList::new(dir.path());
    let net = network_of(1 << 20, rt);
    let size = net.to_json().expect("json").len();
    rt.block_on(list.save(&net)).expect("save");
    let save = measure(30, || {
        rt.block_on(list.save(&net)).expect("save");
    });
    let load = measure(30, || {
        rt.block_on(list.load(net.id())).expect("load");
    });
    let load_json = measure(30, || {
        rt.block_on(list.load_json(net.id())).expect("load_json");
    });
    println!(
        "save  {:>8} KB network (fsync file + dir): median {}  mean {}  ({:.0} saves/s)",
        size / 1024,
        ms(save.median),
        ms(save.mean),
        ops(save.mean)
    );
    println!(
        "load  {:>8} KB network (parse + build):    median {}  mean {}  ({:.0} loads/s)",
        size / 1024,
        ms(load.median),
        ms(load.mean),
        ops(load.mean)
    );
    println!(
        "load_json {:>4} KB (read only):             median {}  mean {}",
        size / 1024,
        ms(load_json.median),
        ms(load_json.mean)
    );

    // 10,000 sessions. Fixture files are written without fsync (setup speed),
    // then the index is built once from them.
    let many = list.with_user("many").expect("user");
    let user_dir = dir.path().join("many");
    std::fs::create_dir_all(&user_dir).expect("dir");
    for i in 0..10_000 {
        let n = RunnableNetwork::builder()
            .name(format!("session {i}"))
            .build();
        n.set_metadata(
            "created_at",
            serde_json::json!(format!("2026-01-01T00:00:00.{i:06}Z")),
        );
        n.set_metadata(
            "updated_at",
            serde_json::json!(format!("2026-01-01T00:00:00.{i:06}Z")),
        );
        n.set_metadata("revision", serde_json::json!(1));
        n.save_to_file(user_dir.join(format!("{}.json", n.id())))
            .expect("fixture");
    }
    let t = Instant::now();
    let found = rt.block_on(many.rebuild_index()).expect("rebuild");
    println!("rebuild_index of {found} sessions: {}", ms(t.elapsed()));
    let cold = measure(5, || {
        let fresh = JsonNetworkList::new(dir.path())
            .with_user("many")
            .expect("user");
        page_times(rt, &fresh, 0, Some(10_000), 1);
    });
    let warm = page_times(rt, &many, 0, None, 100);
    let deep = page_times(rt, &many, 5000, None, 100);
    println!(
        "list page of 50 among 10,000: warm median {} (offset 5000: {}), cold (new process, reads the index) median {}  [target <= 20 ms]",
        ms(warm.median),
        ms(deep.median),
        ms(cold.median)
    );
    // One save into the big namespace, then a list (reads one new index line).
    let extra = RunnableNetwork::builder().name("extra").build();
    let after_save = measure(20, || {
        rt.block_on(many.save(&extra)).expect("save");
        rt.block_on(many.list(&ListQuery {
            limit: 50,
            ..ListQuery::default()
        }))
        .expect("list");
    });
    println!(
        "save + list among 10,000 (incremental index read): median {}",
        ms(after_save.median)
    );
}

/// (SET ops/s, GET ops/s) from `redis-benchmark --csv`.
fn redis_benchmark(port: u16, size: usize, n: usize) -> Option<(f64, f64)> {
    let out = Command::new("redis-benchmark")
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-c",
            "1",
            "-t",
            "set,get",
        ])
        .args(["-d", &size.to_string(), "-n", &n.to_string(), "--csv"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let rate = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("\"{name}\"")))
            .and_then(|l| l.split(',').nth(1))
            .and_then(|v| v.trim_matches('"').parse::<f64>().ok())
    };
    Some((rate("SET")?, rate("GET")?))
}

/// The median of a few figures.
fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Save / load_json / load rates (ops/s) of one list, side by side with
/// raw `SET` / `GET` of the same bytes on the list's own connection and
/// the floor of a checked save, after a warm-up. The six operations are
/// interleaved, one of each per iteration, so a machine that speeds up or
/// slows down during the run moves them all alike; the rates come from the
/// median times. The loop runs in a task spawned on `rt`, as a request
/// handler of a server would (on a multi-thread runtime that is a worker
/// thread).
fn rates(
    rt: &tokio::runtime::Runtime,
    list: &RedisNetworkList,
    net: &RunnableNetwork,
    iters: usize,
) -> Rates {
    let (list, net) = (list.clone(), net.clone());
    let task = async move {
        let (list, net) = (&list, &net);
        let json = net.to_json().expect("json");
        let key = format!("bench:raw:{}", net.id());
        let moved = format!("{key}:moved");
        let mut conn = list.connector().connection().await.expect("connection");
        // The floor of a checked save: SET, then the least a commit
        // script does (move the bytes into place), in one round trip.
        let floor_script = redis::Script::new("redis.call('RENAME', KEYS[1], KEYS[2]) return -1");
        floor_script
            .load_async(&mut conn)
            .await
            .expect("script load");
        let mut times: [Vec<Duration>; 6] = Default::default();
        let warm = (iters / 10).max(10);
        for i in 0..warm + iters {
            let mut t = Instant::now();
            let mut lap = |slot: usize, times: &mut [Vec<Duration>; 6]| {
                if i >= warm {
                    times[slot].push(t.elapsed());
                }
                t = Instant::now();
            };
            list.save(net).await.expect("save");
            lap(0, &mut times);
            list.load_json(net.id()).await.expect("load_json");
            lap(1, &mut times);
            list.load(net.id()).await.expect("load");
            lap(2, &mut times);
            let mut set = redis::cmd("SET");
            set.arg(&key).arg(json.as_bytes());
            let _: redis::Value = set.query_async(&mut conn).await.expect("raw SET");
            lap(3, &mut times);
            let _: redis::Value = redis::cmd("GET")
                .arg(&key)
                .query_async(&mut conn)
                .await
                .expect("raw GET");
            lap(4, &mut times);
            let mut pipe = redis::pipe();
            pipe.cmd("SET")
                .arg(&key)
                .arg(json.as_bytes())
                .arg("PX")
                .arg(60_000)
                .cmd("EVALSHA")
                .arg(floor_script.get_hash())
                .arg(2)
                .arg(&key)
                .arg(&moved);
            let _: redis::Value = pipe.query_async(&mut conn).await.expect("floor");
            lap(5, &mut times);
        }
        let _: () = redis::cmd("DEL")
            .arg(&key)
            .arg(&moved)
            .query_async(&mut conn)
            .await
            .expect("del");
        let [save, load_json, load, set, get, floor] = times.map(|t| ops(Stats::of(t).median));
        Rates {
            save,
            load_json,
            load,
            set,
            get,
            floor,
        }
    };
    rt.block_on(async { tokio::spawn(task).await.expect("bench task") })
}

/// Operations per second of one round.
struct Rates {
    save: f64,
    load_json: f64,
    load: f64,
    /// Raw `SET` / `GET` of the same bytes on the list's connection.
    set: f64,
    get: f64,
    /// `SET` + a one-`RENAME` script: the least a checked save costs.
    floor: f64,
}

fn redis_figures(rt: &tokio::runtime::Runtime) {
    println!("== RedisNetworkList ==");
    if !lc_agent_test_support::redis::installed() {
        println!("redis-server or redis-cli is not installed: the Redis half is skipped (apt-get install redis-server redis-tools)");
        return;
    }
    let server = lc_agent_test_support::RedisServer::start();
    let list = RedisNetworkList::builder(RedisConnector::new(server.url()).expect("connector"))
        .prefix("bench")
        .build()
        .expect("build");
    // One client, one request at a time. `redis-benchmark -c 1` is one
    // single-threaded event loop; the list is measured from a
    // current-thread runtime (the same shape) and from a two-worker
    // multi-thread runtime (the usual server setup). Each round runs the
    // list, the raw commands on its connection and then redis-benchmark
    // on the same server, in steady state (warm-up first, thousands of
    // requests); the ratios reported are the medians of the rounds'.
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let runtimes = [("current-thread", &current), ("multi-thread(2)", rt)];
    const ROUNDS: usize = 3;
    for (size, iters) in [(100 << 10, 2000), (1 << 20, 400)] {
        let net = network_of(size, rt);
        let bytes = net.to_json().expect("json").len();
        let to_json = measure(iters, || {
            std::hint::black_box(net.to_json().expect("json"));
        });
        let json = net.to_json().expect("json");
        let from_json = measure(iters.min(200), || {
            std::hint::black_box(RunnableNetwork::from_json(&json).expect("parse"));
        });
        println!(
            "{:>5} KB: core serialization: to_json {} (node JSON cached), from_json {}",
            bytes / 1024,
            ms(to_json.mean),
            ms(from_json.mean)
        );
        for (flavor, rt) in runtimes {
            // Connections belong to the runtime that made them: one list
            // per runtime.
            let list =
                RedisNetworkList::builder(RedisConnector::new(server.url()).expect("connector"))
                    .prefix("bench")
                    .user(format!("u{size}"))
                    .build()
                    .expect("build");
            // Ratios in %: to the crate's raw SET/GET, to redis-benchmark.
            let [mut save_raw, mut json_raw, mut load_raw] = [(); 3].map(|_| Vec::new());
            let [mut floor_raw, mut save_floor] = [(); 2].map(|_| Vec::new());
            let [mut save_rb, mut json_rb, mut set_rb, mut get_rb] = [(); 4].map(|_| Vec::new());
            let mut last = None;
            for _ in 0..ROUNDS {
                let r = rates(rt, &list, &net, iters);
                let Some((set, get)) = redis_benchmark(server.port(), bytes, iters.max(2000))
                else {
                    println!("redis-benchmark not available: no comparison");
                    return;
                };
                save_raw.push(100.0 * r.save / r.set);
                json_raw.push(100.0 * r.load_json / r.get);
                load_raw.push(100.0 * r.load / r.get);
                floor_raw.push(100.0 * r.floor / r.set);
                save_floor.push(100.0 * r.save / r.floor);
                save_rb.push(100.0 * r.save / set);
                json_rb.push(100.0 * r.load_json / get);
                set_rb.push(100.0 * r.set / set);
                get_rb.push(100.0 * r.get / get);
                last = Some((r, set, get));
            }
            let Some((r, set, get)) = last else {
                return;
            };
            println!(
                "{:>5} KB, {flavor}: save {:.0}% of the crate's SET | load_json {:.0}% of its GET  [target >= 90%] | load (with parse) {:.0}% of its GET",
                bytes / 1024,
                median(save_raw),
                median(json_raw),
                median(load_raw),
            );
            println!(
                "          the floor of a checked save (SET + a one-RENAME script) is {:.0}% of the crate's SET; save is {:.0}% of that floor",
                median(floor_raw),
                median(save_floor),
            );
            println!(
                "          vs redis-benchmark -c 1: save {:.0}% of SET, load_json {:.0}% of GET; the crate's raw SET {:.0}%, GET {:.0}%",
                median(save_rb),
                median(json_rb),
                median(set_rb),
                median(get_rb),
            );
            println!(
                "          last round (ops/s): save {:.0}, raw SET {:.0}, redis-benchmark SET {set:.0}; load_json {:.0}, load {:.0}, raw GET {:.0}, redis-benchmark GET {get:.0}",
                r.save, r.set, r.load_json, r.load, r.get
            );
        }
    }

    // 100,000 small sessions, saved through the list (8 concurrent clients).
    let many = list.with_user("many").expect("user");
    let t = Instant::now();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let many = many.clone();
            tasks.push(tokio::spawn(async move {
                for _ in 0..12_500 {
                    let n = RunnableNetwork::builder().name("s").build();
                    many.save(&n).await.expect("save");
                }
            }));
        }
        for task in tasks {
            task.await.expect("task");
        }
    });
    println!(
        "populated 100,000 sessions in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let first = page_times(rt, &many, 0, Some(100_000), 200);
    let deep = page_times(rt, &many, 50_000, None, 200);
    println!(
        "list page of 50 among 100,000: median {} (offset 50,000: {})  [target <= 5 ms]",
        ms(first.median),
        ms(deep.median)
    );
}
