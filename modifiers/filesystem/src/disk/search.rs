//! How the disk backend walks and searches: the walk (honouring ignore
//! files, following in-root links once), `ls`, `glob` and `grep` over it,
//! and the search's early stop once enough matches are settled.

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::PathBuf;

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;

use super::super::backend::{FileMatches, GrepQuery, LsEntry};
use super::super::error::{FsError, FsResult};
use super::super::gitignore::IgnoreRules;
use super::super::glob::GlobPattern;
use super::super::grep::GrepEngine;
use super::super::path;
use super::{map_err, unreadable_dir, Disk};

/// What a walk found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    File,
    Dir,
    LinkFile,
    LinkDir,
    /// A directory that could not be opened or read (not searched).
    Unreadable,
}

pub(super) struct Found {
    pub(super) vpath: String,
    pub(super) rel: PathBuf,
    pub(super) kind: Kind,
}

/// What a walk hands a search: a file, or a directory it could not read.
enum Item {
    File(String, PathBuf),
    Unreadable(String),
}

/// How far a search's answer is settled: the matching lines of the files
/// searched so far, in print order, counted up to the first file not
/// done yet.
struct Settled {
    /// Matching lines per file index; `None` while it is being searched.
    counts: Vec<Option<usize>>,
    /// The first index not done yet.
    upto: usize,
    /// The matching lines before `upto`.
    total: usize,
    /// Matching lines that settle the answer.
    needed: usize,
    /// The index at which the answer was settled.
    settled_at: Option<usize>,
}

impl Settled {
    fn new(needed: usize) -> Self {
        Self {
            counts: Vec::new(),
            upto: 0,
            total: 0,
            needed,
            settled_at: None,
        }
    }

    /// Records that file `index` holds `matches` matching lines; `true`
    /// once the answer is settled.
    fn record(&mut self, index: usize, matches: usize) -> bool {
        if self.counts.len() <= index {
            self.counts.resize(index + 1, None);
        }
        self.counts[index] = Some(matches);
        while self.settled_at.is_none()
            && let Some(Some(n)) = self.counts.get(self.upto)
        {
            self.total += n;
            if self.total >= self.needed {
                self.settled_at = Some(self.upto);
            }
            self.upto += 1;
        }
        self.settled_at.is_some()
    }
}

impl Disk {
    /// Loads the `.gitignore` files of the directories above `dir`.
    fn ancestor_rules(&self, dir: &str) -> IgnoreRules {
        let mut rules = IgnoreRules::default();
        let mut chain = vec![];
        let mut current = dir;
        while current != "/" {
            current = path::parent(current);
            chain.push(current);
        }
        for d in chain.into_iter().rev() {
            if let Ok(mut f) = self.root.open(self.rel(&path::join(d, ".gitignore"))) {
                let mut text = String::new();
                if f.read_to_string(&mut text).is_ok() {
                    rules.add(d, &text);
                }
            }
        }
        rules
    }

    /// Walks below `start` (already opened), skipping `.git` directories,
    /// symlinks that escape, dangle or loop, and (with `rules`) ignored
    /// paths. Symlinked directories are reported, never entered.
    pub(super) fn walk(
        &self,
        start: &str,
        first: Dir,
        rules: Option<&mut IgnoreRules>,
    ) -> Vec<Found> {
        let mut out = Vec::new();
        self.walk_each(start, first, rules, &mut |found| {
            out.push(found);
            true
        });
        out
    }

    /// Walks below `start`, handing each entry to `visit` as soon as it is
    /// found (so a search can run while the walk goes on); `visit` returns
    /// `false` to stop the walk. Entries come in the order the tools print
    /// them (the byte order of the shown path: a directory is followed by
    /// what it holds), so a search can stop once the answer is settled.
    fn walk_each(
        &self,
        start: &str,
        first: Dir,
        mut rules: Option<&mut IgnoreRules>,
        visit: &mut dyn FnMut(Found) -> bool,
    ) {
        /// What the walk does next: read a directory, or hand on an entry.
        enum Step {
            Read(String, PathBuf, Option<Dir>),
            Visit(Found),
        }
        let mut stack = vec![Step::Read(start.to_string(), self.rel(start), Some(first))];
        while let Some(step) = stack.pop() {
            let (vdir, rdir, handle) = match step {
                Step::Visit(found) => {
                    if !visit(found) {
                        return;
                    }
                    continue;
                }
                Step::Read(vdir, rdir, handle) => (vdir, rdir, handle),
            };
            let unreadable = |vpath, rel| Found {
                vpath,
                rel,
                kind: Kind::Unreadable,
            };
            let dir = match handle {
                Some(d) => d,
                None => match self.root.open_dir_nofollow(&rdir) {
                    Ok(d) => d,
                    // Gone since it was listed: nothing to report.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(_) => {
                        if !visit(unreadable(vdir, rdir)) {
                            return;
                        }
                        continue;
                    }
                },
            };
            let Ok(entries) = dir.entries() else {
                if !visit(unreadable(vdir, rdir)) {
                    return;
                }
                continue;
            };
            let entries: Vec<(OsString, cap_std::fs::FileType)> = entries
                .filter_map(|e| e.ok())
                .filter_map(|e| Some((e.file_name(), e.file_type().ok()?)))
                .collect();
            if let Some(rules) = rules.as_deref_mut()
                && entries
                    .iter()
                    .any(|(n, t)| n == ".gitignore" && t.is_file())
                && let Ok(mut f) = dir.open(".gitignore")
            {
                let mut text = String::new();
                if f.read_to_string(&mut text).is_ok() {
                    rules.add(&vdir, &text);
                }
            }
            // (sort key, steps): a directory sorts as `name/`.
            let mut children: Vec<(String, Found)> = Vec::with_capacity(entries.len());
            for (name, ft) in entries {
                let Some(name) = name.to_str() else {
                    tracing::debug!("skipping a file name that is not UTF-8");
                    continue;
                };
                let vpath = path::join(&vdir, name);
                let rel = rdir.join(name);
                let kind = if ft.is_dir() {
                    Kind::Dir
                } else if ft.is_file() {
                    Kind::File
                } else if ft.is_symlink() {
                    match self.root.metadata(&rel) {
                        Ok(md) if md.is_dir() => Kind::LinkDir,
                        Ok(md) if md.is_file() => Kind::LinkFile,
                        _ => continue,
                    }
                } else {
                    continue;
                };
                let is_dir = matches!(kind, Kind::Dir | Kind::LinkDir);
                if is_dir && name == ".git" {
                    continue;
                }
                if let Some(rules) = rules.as_deref()
                    && rules.is_ignored(&vpath, is_dir)
                {
                    continue;
                }
                let mut key = path::shown(name).into_owned();
                if kind == Kind::Dir {
                    key.push('/');
                }
                children.push((key, Found { vpath, rel, kind }));
            }
            children.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            for (_, found) in children.into_iter().rev() {
                if found.kind == Kind::Dir {
                    stack.push(Step::Read(found.vpath.clone(), found.rel.clone(), None));
                }
                stack.push(Step::Visit(found));
            }
        }
    }

    pub(super) fn ls(&self, dir: &str, recursive: bool) -> FsResult<Vec<LsEntry>> {
        if path::in_git_dir(dir) {
            return Err(FsError::DirectoryNotFound(dir.to_string()));
        }
        let handle = self.open_dir(dir, FsError::DirectoryNotFound)?;
        if recursive {
            return Ok(self
                .walk(dir, handle, None)
                .into_iter()
                .map(|f| match f.kind {
                    // Reported with a trailing `/` (see `Backend`).
                    Kind::Unreadable => LsEntry {
                        path: unreadable_dir(&f.vpath),
                        is_dir: true,
                    },
                    kind => LsEntry {
                        is_dir: matches!(kind, Kind::Dir | Kind::LinkDir),
                        path: f.vpath,
                    },
                })
                .collect());
        }
        let entries = handle
            .entries()
            .map_err(|e| map_err(e, dir, FsError::DirectoryNotFound))?;
        let mut out = Vec::new();
        for entry in entries.filter_map(|e| e.ok()) {
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            let Ok(ft) = entry.file_type() else {
                continue;
            };
            let vpath = path::join(dir, name);
            let is_dir = if ft.is_symlink() {
                self.root
                    .metadata(self.rel(&vpath))
                    .is_ok_and(|m| m.is_dir())
            } else {
                ft.is_dir()
            };
            if is_dir && name == ".git" {
                continue;
            }
            out.push(LsEntry {
                path: vpath,
                is_dir,
            });
        }
        Ok(out)
    }

    /// Checks a search root: `Ok(true)` for a file, `Ok(false)` for a directory.
    fn search_root(&self, target: &str) -> FsResult<bool> {
        if path::in_git_dir(target) {
            return Err(FsError::PathNotFound(target.to_string()));
        }
        let md = self
            .root
            .metadata(self.rel(target))
            .map_err(|e| map_err(e, target, FsError::PathNotFound))?;
        Ok(!md.is_dir())
    }

    pub(super) fn glob(&self, glob: &GlobPattern, dir: &str) -> FsResult<Vec<String>> {
        if self.search_root(dir)? {
            return Err(FsError::NotADirectory(dir.to_string()));
        }
        let handle = self.open_dir(dir, FsError::PathNotFound)?;
        let mut rules = self.ancestor_rules(dir);
        Ok(self
            .walk(dir, handle, Some(&mut rules))
            .into_iter()
            .filter_map(|f| match f.kind {
                Kind::Unreadable => Some(unreadable_dir(&f.vpath)),
                Kind::File | Kind::LinkFile
                    if path::relative_to(&f.vpath, dir).is_some_and(|r| glob.is_match(r)) =>
                {
                    Some(f.vpath)
                }
                _ => None,
            })
            .collect())
    }

    pub(super) fn grep(&self, query: &GrepQuery, target: &str) -> FsResult<Vec<FileMatches>> {
        let glob = query.glob.as_ref();
        let engine = GrepEngine::new(query)?;
        if self.search_root(target)? {
            let name = target.rsplit('/').next().unwrap_or_default();
            if glob.is_some_and(|g| !g.is_match(name)) {
                return Ok(Vec::new());
            }
            let mut searcher = engine.searcher();
            return Ok(self
                .search_one(&engine, &mut searcher, target, &self.rel(target))
                .into_iter()
                .collect());
        }
        let handle = self.open_dir(target, FsError::PathNotFound)?;
        let mut rules = self.ancestor_rules(target);
        // The answer is settled once the files so far, in the order the
        // tool prints them, hold more than `max_count` matching lines.
        let needed = query.max_count.saturating_add(1);
        Ok(self.search_files(&engine, needed, |send| {
            self.walk_each(target, handle, Some(&mut rules), &mut |f| {
                if f.kind == Kind::Unreadable {
                    return send(Item::Unreadable(unreadable_dir(&f.vpath)));
                }
                let wanted = matches!(f.kind, Kind::File | Kind::LinkFile)
                    && glob.is_none_or(|g| {
                        path::relative_to(&f.vpath, target).is_some_and(|r| g.is_match(r))
                    });
                if wanted {
                    send(Item::File(f.vpath, f.rel))
                } else {
                    true
                }
            });
        }))
    }

    /// Searches the files `produce` hands over (in the order the tool
    /// prints them), on worker threads that start while it is still
    /// producing (each file opened through the root handle). Once the
    /// files up to one of them hold `needed` matching lines, nothing after
    /// it can change the answer: `send` then returns `false` (the walk
    /// stops), the workers take no more, and whatever was searched after
    /// it is dropped, so the answer is the same whatever the timing.
    fn search_files(
        &self,
        engine: &GrepEngine,
        needed: usize,
        produce: impl FnOnce(&mut dyn FnMut(Item) -> bool),
    ) -> Vec<FileMatches> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Item)>();
        let rx = parking_lot::Mutex::new(rx);
        let settled = parking_lot::Mutex::new(Settled::new(needed));
        let stop = std::sync::atomic::AtomicBool::new(false);
        let stopped = || stop.load(std::sync::atomic::Ordering::Relaxed);
        let record = |index: usize, found: &Option<FileMatches>| {
            let matches = found
                .as_ref()
                .map_or(0, |f| f.lines.iter().filter(|l| l.is_match).count());
            if settled.lock().record(index, matches) {
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        };
        let mut found: Vec<(usize, FileMatches)> = std::thread::scope(|s| {
            let work = || {
                let mut searcher = engine.searcher();
                let mut found = Vec::new();
                while !stopped() {
                    let next = rx.lock().recv();
                    let Ok((index, item)) = next else {
                        break;
                    };
                    let result = match item {
                        Item::File(vpath, rel) => {
                            self.search_one(engine, &mut searcher, &vpath, &rel)
                        }
                        Item::Unreadable(vpath) => Some(FileMatches::unreadable(vpath)),
                    };
                    record(index, &result);
                    found.extend(result.map(|r| (index, r)));
                }
                found
            };
            let handles: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
            let mut next = 0usize;
            produce(&mut |item| {
                if stopped() {
                    return false;
                }
                // Workers only stop once the sender is gone or the answer
                // is settled: a failed send changes nothing.
                let _ = tx.send((next, item));
                next += 1;
                true
            });
            drop(tx);
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        });
        if let Some(last) = settled.lock().settled_at {
            found.retain(|(index, _)| *index <= last);
        }
        found.into_iter().map(|(_, f)| f).collect()
    }

    /// Searches one file; a file that cannot be opened is reported
    /// (`unreadable`) unless it is gone.
    fn search_one(
        &self,
        engine: &GrepEngine,
        searcher: &mut grep_searcher::Searcher,
        vpath: &str,
        rel: &std::path::Path,
    ) -> Option<FileMatches> {
        let file = match self.root.open(rel) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(_) => return Some(FileMatches::unreadable(vpath.to_string())),
        };
        match engine.search_file(searcher, vpath, &file.into_std()) {
            Ok(found) => found,
            Err(e) => {
                tracing::debug!(path = %vpath, error = %e, "grep: skipping unreadable file");
                None
            }
        }
    }
}
