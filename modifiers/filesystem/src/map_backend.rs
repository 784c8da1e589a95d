//! The shared logic of map-backed backends ([`super::StateBackend`] over
//! the network's `files`, [`super::StoreBackend`] over a key-value store):
//! every operation on a sorted map from virtual path to file. Directories
//! are implied by file paths, and the same `.git`, `.gitignore`, glob and
//! regex rules as on disk apply.
//!
//! ```text
//!  BTreeMap<path, V> --under(dir)--> the files below a directory (one range)
//!     ls / glob / grep_files / read_text / edit_text / check_write + put
//!        use gitignore.rs, glob.rs, grep.rs, encoding.rs, paging.rs, edit.rs
//! ```

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use lc_agent::FileData;

use super::backend::{FileMatches, GrepQuery, LsEntry, ReadPage};
use super::encoding::{classify, Encoding};
use super::error::{FsError, FsResult};
use super::gitignore::IgnoreRules;
use super::glob::GlobPattern;
use super::grep::GrepEngine;
use super::paging::page;
use super::path;

fn prefix_of(dir: &str) -> String {
    if dir == "/" {
        "/".to_string()
    } else {
        format!("{dir}/")
    }
}

/// Files strictly below `dir`.
fn under<'a, V>(
    files: &'a BTreeMap<String, V>,
    dir: &str,
) -> impl Iterator<Item = (&'a String, &'a V)> + 'a + use<'a, V> {
    let prefix = prefix_of(dir);
    files
        .range(prefix.clone()..)
        .take_while(move |(k, _)| k.starts_with(&prefix))
}

/// Whether `dir` is a directory (the root, or the parent of some file).
fn is_dir<V>(files: &BTreeMap<String, V>, dir: &str) -> bool {
    dir == "/" || under(files, dir).next().is_some()
}

/// The error for a path that is not a file: a directory or missing.
pub(crate) fn not_a_file<V>(files: &BTreeMap<String, V>, file: &str) -> FsError {
    if is_dir(files, file) {
        FsError::IsDirectoryUseLs(file.to_string())
    } else {
        FsError::FileNotFound(file.to_string())
    }
}

/// `ls` over file paths.
pub(crate) fn ls<V>(
    files: &BTreeMap<String, V>,
    dir: &str,
    recursive: bool,
) -> FsResult<Vec<LsEntry>> {
    if path::in_git_dir(dir) {
        return Err(FsError::DirectoryNotFound(dir.to_string()));
    }
    if files.contains_key(dir) {
        return Err(FsError::NotADirectory(dir.to_string()));
    }
    if !is_dir(files, dir) {
        return Err(FsError::DirectoryNotFound(dir.to_string()));
    }
    let mut out = BTreeSet::new();
    for (file, _) in under(files, dir) {
        let Some(rel) = path::relative_to(file, dir) else {
            continue;
        };
        let parts: Vec<&str> = rel.split('/').collect();
        let mut current = dir.to_string();
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            if !last && *part == ".git" {
                break;
            }
            current = path::join(&current, part);
            out.insert(LsEntry {
                path: current.clone(),
                is_dir: !last,
            });
            if !recursive {
                break;
            }
        }
    }
    Ok(out.into_iter().collect())
}

/// The `.gitignore` rules of a file set.
pub(crate) fn ignore_rules<V>(
    files: &BTreeMap<String, V>,
    text: impl Fn(&V) -> Cow<'_, str>,
) -> IgnoreRules {
    let mut rules = IgnoreRules::default();
    for (file, value) in files {
        if file.ends_with("/.gitignore") && !path::file_in_git_dir(file) {
            rules.add(path::parent(file), &text(value));
        }
    }
    rules
}

/// Checks a search directory for `glob` (`file_ok`: grep may search a file).
fn search_root<V>(files: &BTreeMap<String, V>, dir: &str, file_ok: bool) -> FsResult<bool> {
    if path::in_git_dir(dir) {
        return Err(FsError::PathNotFound(dir.to_string()));
    }
    if files.contains_key(dir) {
        return if file_ok {
            Ok(true)
        } else {
            Err(FsError::NotADirectory(dir.to_string()))
        };
    }
    if !is_dir(files, dir) {
        return Err(FsError::PathNotFound(dir.to_string()));
    }
    Ok(false)
}

/// The files a walk from `dir` visits: not in `.git`, not ignored.
fn visible<'a: 'b, 'b, V>(
    files: &'a BTreeMap<String, V>,
    rules: &'b IgnoreRules,
    dir: &'b str,
) -> impl Iterator<Item = (&'a String, &'a V)> + 'b {
    under(files, dir).filter(move |(file, _)| {
        path::relative_to(file, dir)
            .is_some_and(|rel| !rel.split('/').rev().skip(1).any(|c| c == ".git"))
            && !rules.hides_below(dir, file)
    })
}

/// `glob` over a file set.
pub(crate) fn glob<V>(
    files: &BTreeMap<String, V>,
    rules: &IgnoreRules,
    glob: &GlobPattern,
    dir: &str,
) -> FsResult<Vec<String>> {
    search_root(files, dir, false)?;
    Ok(visible(files, rules, dir)
        .filter(|(file, _)| path::relative_to(file, dir).is_some_and(|rel| glob.is_match(rel)))
        .map(|(file, _)| file.clone())
        .collect())
}

/// The files `grep` searches under `target` (a directory or one file).
fn grep_candidates<'a, V>(
    files: &'a BTreeMap<String, V>,
    rules: &IgnoreRules,
    query: &GrepQuery,
    target: &str,
) -> FsResult<Vec<(&'a String, &'a V)>> {
    let glob = query.glob.as_ref();
    if search_root(files, target, true)? {
        let Some((file, value)) = files.get_key_value(target) else {
            return Ok(Vec::new());
        };
        let name = file.rsplit('/').next().unwrap_or_default();
        if glob.is_some_and(|g| !g.is_match(name)) {
            return Ok(Vec::new());
        }
        return Ok(vec![(file, value)]);
    }
    Ok(visible(files, rules, target)
        .filter(|(file, _)| {
            glob.is_none_or(|g| path::relative_to(file, target).is_some_and(|rel| g.is_match(rel)))
        })
        .collect())
}

/// Searches file texts (in path order).
fn grep_texts<'a>(
    query: &GrepQuery,
    texts: impl Iterator<Item = (&'a str, Cow<'a, str>)>,
) -> FsResult<Vec<FileMatches>> {
    let engine = GrepEngine::new(query)?;
    let mut searcher = engine.searcher();
    Ok(texts
        .filter_map(|(file, text)| engine.search_bytes(&mut searcher, file, text.as_bytes()))
        .collect())
}

/// `grep` over in-memory files: the ignore rules, the candidates under
/// `target`, then the search.
pub(crate) fn grep_files(
    files: &BTreeMap<String, FileData>,
    query: &GrepQuery,
    target: &str,
) -> FsResult<Vec<FileMatches>> {
    let rules = ignore_rules(files, |d| d.text().into());
    let candidates = grep_candidates(files, &rules, query, target)?;
    grep_texts(
        query,
        candidates
            .into_iter()
            .map(|(file, data)| (file.as_str(), data.text().into())),
    )
}

/// `read` of a file's text.
pub(crate) fn read_text(file: &str, text: &str, offset: usize, limit: usize) -> FsResult<ReadPage> {
    let binary = || FsError::Binary {
        path: file.to_string(),
        size: text.len() as u64,
    };
    let encoding = classify(text.as_bytes());
    if encoding == Encoding::Binary {
        return Err(binary());
    }
    // Text held as a string is UTF-8; a BOM is named, not shown.
    let body = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    match page(body.as_bytes(), offset, limit) {
        Ok(mut window) => {
            window.encoding = encoding.name();
            Ok(window)
        }
        Err(e) => Err(FsError::Io {
            path: file.to_string(),
            reason: e.to_string(),
        }),
    }
}

/// Checks a write: directories, parents that are files, existing files.
pub(crate) fn check_write<V>(
    files: &BTreeMap<String, V>,
    file: &str,
    overwrite: bool,
) -> FsResult<()> {
    path::check_new_name(file)?;
    if is_dir(files, file) {
        return Err(FsError::IsDirectory(file.to_string()));
    }
    let mut ancestor = String::new();
    for part in path::components(path::parent(file)) {
        ancestor.push('/');
        ancestor.push_str(part);
        if files.contains_key(&ancestor) {
            return Err(FsError::ParentIsFile {
                path: file.to_string(),
                parent: ancestor,
            });
        }
    }
    if files.contains_key(file) && !overwrite {
        return Err(FsError::AlreadyExists(file.to_string()));
    }
    Ok(())
}

/// Writes `text` into a file map (keeping `created_at` on overwrite).
pub(crate) fn put(files: &mut BTreeMap<String, FileData>, file: &str, text: &str) {
    match files.get_mut(file) {
        Some(data) => data.set_text(text),
        None => {
            files.insert(file.to_string(), FileData::new(text));
        }
    }
}

/// The text of uploaded bytes: exactly the bytes when they are UTF-8;
/// bytes that are not are refused ([`FsError::NotText`]), never altered.
pub(crate) fn uploaded_text(file: &str, bytes: Vec<u8>) -> FsResult<String> {
    String::from_utf8(bytes).map_err(|_| FsError::NotText(file.to_string()))
}
