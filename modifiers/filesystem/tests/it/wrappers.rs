//! Backend wrappers reach their inner backend with every call: a
//! recording backend sits inside the file limits (`FileLimits::apply`),
//! the path-rule guard, a custom `Wrap` and both sides of a composite, and
//! each `Backend` method called on the wrapper must arrive there (or be
//! the wrapper's own rule). A method a wrapper forgot would fall to
//! `Backend`'s default and never reach the recorder: `read_bytes` behind
//! the file limits once read a whole file before its size check that way.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use lc_agent::RunnableNetwork;
use lc_agent_filesystem::{
    Backend, BackendSource, CompositeBackend, ExecuteResponse, FileDownloadResponse, FileLimits,
    FileMatches, FileUploadResponse, Fingerprint, FsError, GlobPattern, GrepQuery, LineEdit,
    LsEntry, PermissionRule, Permissions, ReadPage, Recorded, RuleMode, Wrap,
};

type FsResult<T> = Result<T, FsError>;

/// Every `Backend` method, by name: each one is called on every wrapper.
/// (A method added to `Backend` must be stated by `Recorder`, which the
/// lint below enforces, and added here.)
const METHODS: [&str; 21] = [
    "ls",
    "read",
    "write",
    "edit",
    "glob",
    "grep",
    "upload_files",
    "download_files",
    "delete",
    "edit_capped",
    "edit_lines",
    "delete_tree",
    "append",
    "fingerprint",
    "write_recorded",
    "edit_recorded",
    "real_paths",
    "limits",
    "read_bytes",
    "supports_execute",
    "execute",
];

/// A backend that answers every call with an empty success and notes the
/// method and its path.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<(&'static str, String)>>,
}

impl Recorder {
    fn note(&self, method: &'static str, path: &str) {
        self.calls.lock().unwrap().push((method, path.to_string()));
    }

    fn take(&self) -> Vec<(&'static str, String)> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl Backend for Recorder {
    async fn ls(&self, dir: &str, _recursive: bool) -> FsResult<Vec<LsEntry>> {
        self.note("ls", dir);
        Ok(Vec::new())
    }
    async fn read(&self, path: &str, _offset: usize, _limit: usize) -> FsResult<ReadPage> {
        self.note("read", path);
        Ok(ReadPage::default())
    }
    async fn write(&self, path: &str, _content: &str, _overwrite: bool) -> FsResult<()> {
        self.note("write", path);
        Ok(())
    }
    async fn edit(&self, path: &str, _old: &str, _new: &str, _all: bool) -> FsResult<usize> {
        self.note("edit", path);
        Ok(1)
    }
    async fn glob(&self, _pattern: &GlobPattern, dir: &str) -> FsResult<Vec<String>> {
        self.note("glob", dir);
        Ok(Vec::new())
    }
    async fn grep(&self, _query: &GrepQuery, path: &str) -> FsResult<Vec<FileMatches>> {
        self.note("grep", path);
        Ok(Vec::new())
    }
    async fn upload_files(&self, files: Vec<(String, Vec<u8>)>) -> Vec<FileUploadResponse> {
        files
            .into_iter()
            .map(|(path, _)| {
                self.note("upload_files", &path);
                FileUploadResponse { path, error: None }
            })
            .collect()
    }
    async fn download_files(&self, paths: Vec<String>) -> Vec<FileDownloadResponse> {
        paths
            .into_iter()
            .map(|path| {
                self.note("download_files", &path);
                FileDownloadResponse {
                    path,
                    content: Some(b"x".to_vec()),
                    error: None,
                }
            })
            .collect()
    }
    async fn delete(&self, path: &str) -> FsResult<()> {
        self.note("delete", path);
        Ok(())
    }
    async fn edit_capped(
        &self,
        path: &str,
        _edit: (&str, &str, bool),
        _max_bytes: Option<u64>,
    ) -> FsResult<usize> {
        self.note("edit_capped", path);
        Ok(1)
    }
    async fn edit_lines(&self, path: &str, _edit: &LineEdit) -> FsResult<()> {
        self.note("edit_lines", path);
        Ok(())
    }
    async fn delete_tree(&self, dir: &str) -> FsResult<()> {
        self.note("delete_tree", dir);
        Ok(())
    }
    async fn append(&self, path: &str, _text: &str) -> FsResult<()> {
        self.note("append", path);
        Ok(())
    }
    async fn fingerprint(&self, path: &str, _keep: usize) -> Option<Fingerprint> {
        self.note("fingerprint", path);
        Some(Fingerprint {
            sha256: "0".repeat(64),
            bytes: None,
        })
    }
    async fn write_recorded(
        &self,
        path: &str,
        _content: &str,
        _overwrite: bool,
        _keep: usize,
    ) -> FsResult<Recorded<()>> {
        self.note("write_recorded", path);
        Ok(Recorded {
            value: (),
            before: None,
            after: None,
        })
    }
    async fn edit_recorded(
        &self,
        path: &str,
        _edit: (&str, &str, bool),
        _keep: usize,
        _max_bytes: Option<u64>,
    ) -> FsResult<Recorded<usize>> {
        self.note("edit_recorded", path);
        Ok(Recorded {
            value: 1,
            before: None,
            after: None,
        })
    }
    async fn real_paths(&self, paths: &[String]) -> Vec<Option<String>> {
        for path in paths {
            self.note("real_paths", path);
        }
        vec![None; paths.len()]
    }
    fn limits(&self) -> FileLimits {
        self.note("limits", "");
        FileLimits::default()
    }
    async fn read_bytes(&self, path: &str, _max: u64) -> FsResult<Vec<u8>> {
        self.note("read_bytes", path);
        Ok(b"x".to_vec())
    }
    fn supports_execute(&self) -> bool {
        self.note("supports_execute", "");
        true
    }
    async fn execute(&self, _command: &str, _timeout_secs: u64) -> FsResult<ExecuteResponse> {
        self.note("execute", "");
        Ok(ExecuteResponse {
            output: String::new(),
            exit_code: Some(0),
            truncated_bytes: None,
            timed_out: false,
            note: None,
        })
    }
}

/// Calls `method` on `backend`, on `file` (a file) or `dir` (a folder)
/// where it takes a path; `Err` when the call failed (a refused upload or
/// download, no fingerprint included).
async fn call(backend: &dyn Backend, method: &str, file: &str, dir: &str) -> Result<(), String> {
    let any = GlobPattern::new("**").unwrap();
    let query = GrepQuery::new("x");
    let edit = ("x", "y", false);
    let got = match method {
        "ls" => backend.ls(dir, true).await.map(drop),
        "read" => backend.read(file, 0, 10).await.map(drop),
        "write" => backend.write(file, "x", true).await,
        "edit" => backend.edit(file, "x", "y", false).await.map(drop),
        "glob" => backend.glob(&any, dir).await.map(drop),
        "grep" => backend.grep(&query, dir).await.map(drop),
        "upload_files" => {
            let done = backend
                .upload_files(vec![(file.into(), b"x".to_vec())])
                .await;
            return match &done[0].error {
                None => Ok(()),
                Some(e) => Err(e.to_string()),
            };
        }
        "download_files" => {
            let done = backend.download_files(vec![file.into()]).await;
            return match &done[0].error {
                None => Ok(()),
                Some(e) => Err(e.to_string()),
            };
        }
        "delete" => backend.delete(file).await,
        "edit_capped" => backend
            .edit_capped(file, edit, Some(1 << 20))
            .await
            .map(drop),
        "edit_lines" => backend.edit_lines(file, &LineEdit::delete(1, 1)).await,
        "delete_tree" => backend.delete_tree(dir).await,
        "append" => backend.append(file, "x").await,
        "fingerprint" => {
            return match backend.fingerprint(file, 10).await {
                Some(_) => Ok(()),
                None => Err("no fingerprint".into()),
            };
        }
        "write_recorded" => backend.write_recorded(file, "x", true, 10).await.map(drop),
        "edit_recorded" => backend.edit_recorded(file, edit, 10, None).await.map(drop),
        "real_paths" => {
            backend.real_paths(&[file.to_string()]).await;
            Ok(())
        }
        "limits" => {
            backend.limits();
            Ok(())
        }
        "read_bytes" => backend.read_bytes(file, 1 << 20).await.map(drop),
        "supports_execute" => {
            assert!(backend.supports_execute(), "{method}");
            Ok(())
        }
        "execute" => backend.execute("true", 5).await.map(drop),
        other => panic!("no call written for {other}"),
    };
    got.map_err(|e| e.to_string())
}

/// Calls every method on `wrapper` and asserts that each one reached
/// `inner` as itself (with `inner_file` / `inner_dir` as the path, where it
/// takes one), except `own`: the wrapper's own rules.
async fn assert_every_call_reaches(
    label: &str,
    wrapper: &dyn Backend,
    inner: &Recorder,
    (file, dir): (&str, &str),
    (inner_file, inner_dir): (&str, &str),
    own: &[&str],
) {
    for method in METHODS {
        inner.take();
        call(wrapper, method, file, dir)
            .await
            .unwrap_or_else(|e| panic!("{label}: {method}: {e}"));
        let calls = inner.take();
        if own.contains(&method) {
            assert!(
                calls.iter().all(|(m, _)| *m != method),
                "{label}: {method} is the wrapper's own, yet reached the inner backend: {calls:?}"
            );
            continue;
        }
        let path = match method {
            "ls" | "glob" | "grep" | "delete_tree" => inner_dir,
            "limits" | "supports_execute" | "execute" => "",
            _ => inner_file,
        };
        assert!(
            calls.iter().any(|(m, p)| *m == method && p == path),
            "{label}: {method} did not reach the inner backend as {method}({path:?}); it got {calls:?}"
        );
    }
}

fn ready(recorder: &Arc<Recorder>) -> BackendSource {
    BackendSource::Ready(recorder.clone() as Arc<dyn Backend>)
}

#[test]
fn the_call_list_names_every_method_once() {
    let mut names = METHODS.to_vec();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), METHODS.len());
}

#[tokio::test]
async fn every_call_through_the_file_limits_reaches_the_inner_backend() {
    let inner = Arc::new(Recorder::default());
    let limits = FileLimits::default().max_read_bytes(64 * 1024);
    let limited = limits.apply(ready(&inner)).resolve(&RunnableNetwork::new());
    assert_every_call_reaches(
        "limits",
        limited.as_ref(),
        &inner,
        ("/a/b.txt", "/a"),
        ("/a/b.txt", "/a"),
        &["limits"],
    )
    .await;
    assert_eq!(limited.limits(), limits, "the limits are the wrapper's own");
}

#[tokio::test]
async fn every_call_through_the_path_rules_reaches_the_inner_backend() {
    let inner = Arc::new(Recorder::default());
    let rules =
        Permissions::new([PermissionRule::parse(RuleMode::Deny, "secrets/**").unwrap()]).unwrap();
    let guarded = rules
        .guard(ready(&inner), false)
        .resolve(&RunnableNetwork::new());
    assert_every_call_reaches(
        "guard",
        guarded.as_ref(),
        &inner,
        ("/a/b.txt", "/a"),
        ("/a/b.txt", "/a"),
        &[],
    )
    .await;
    // The guard's own rule holds on every call with a path: refused, and
    // nothing reaches the inner backend.
    for method in METHODS {
        if matches!(
            method,
            "limits" | "supports_execute" | "execute" | "real_paths"
        ) {
            continue;
        }
        inner.take();
        let outcome = call(guarded.as_ref(), method, "/secrets/k.pem", "/secrets/d").await;
        assert!(
            outcome.is_err(),
            "guard: {method} on a denied path succeeded"
        );
        let reached: Vec<_> = inner
            .take()
            .into_iter()
            .filter(|(m, p)| *m == method && p.starts_with("/secrets"))
            .collect();
        assert!(
            reached.is_empty(),
            "guard: {method} on a denied path reached the inner backend: {reached:?}"
        );
    }
}

/// A wrapper that states nothing but its inner backend.
struct Plain(Arc<dyn Backend>);

impl Wrap for Plain {
    fn inner(&self) -> &dyn Backend {
        self.0.as_ref()
    }
}

#[tokio::test]
async fn a_wrapper_that_states_nothing_forwards_every_call() {
    let inner = Arc::new(Recorder::default());
    let plain: Arc<dyn Backend> = Arc::new(Plain(inner.clone()));
    assert_every_call_reaches(
        "plain wrap",
        plain.as_ref(),
        &inner,
        ("/a/b.txt", "/a"),
        ("/a/b.txt", "/a"),
        &[],
    )
    .await;
}

#[tokio::test]
async fn every_call_through_a_composite_reaches_the_backend_of_its_path() {
    let default = Arc::new(Recorder::default());
    let routed = Arc::new(Recorder::default());
    let composite = CompositeBackend::new(ready(&default))
        .route("/mem/", ready(&routed))
        .resolve(&RunnableNetwork::new());
    // A path of the route reaches the route's backend, the prefix taken
    // off; calls without a path go to the default backend.
    let pathless = ["limits", "supports_execute", "execute"];
    assert_every_call_reaches(
        "composite route",
        composite.as_ref(),
        &routed,
        ("/mem/a/b.txt", "/mem/a"),
        ("/a/b.txt", "/a"),
        &pathless,
    )
    .await;
    assert_every_call_reaches(
        "composite default",
        composite.as_ref(),
        &default,
        ("/a/b.txt", "/a"),
        ("/a/b.txt", "/a"),
        &[],
    )
    .await;
}
