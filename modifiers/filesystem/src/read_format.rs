//! The text `read_file` shows for a window of lines: `cat -n` numbering,
//! the long-line marker, the cut at 50,000 chars or the read limit, the
//! paging footer and the encoding note. Shared by text files
//! (`tools/read_file.rs`) and a PDF's extracted text (`media.rs`).

use crate::backend::{PageLine, ReadPage};
use crate::error::FsError;
use crate::paging::MAX_READ_CHARS;

/// The printed form of one line: `cat -n` style, with the long-line
/// marker when it was cut.
fn format_line(n: usize, line: &PageLine) -> String {
    match (line.more_chars, line.more_exact) {
        (0, true) => format!("{n:>6}\t{}", line.text),
        (more, true) => format!(
            "{n:>6}\t{} ... [line truncated, {more} more chars]",
            line.text
        ),
        (more, false) => format!(
            "{n:>6}\t{} ... [line truncated, over {more} more chars]",
            line.text
        ),
    }
}

/// "of <total>" in the paging footers, or what is said when the file was
/// not counted to its end.
fn of_total(total: Option<usize>) -> String {
    match total {
        Some(total) => format!(" of {total}"),
        None => " of a file too large to count".to_string(),
    }
}

/// Formats a read window (`cat -n` lines, truncation, paging footer), and
/// last, for a file that is not plain UTF-8, `[File encoding: <name>]`.
/// The lines stop before they pass 50,000 chars (the spec) or
/// `read_limit` bytes ([`FileLimits`](crate::FileLimits)), whichever
/// comes first.
pub(crate) fn format_read(page: &ReadPage, read_limit: u64) -> Result<String, FsError> {
    let mut out = format_lines(page, read_limit)?;
    if let (Some(name), false) = (page.encoding, page.blank) {
        out.push_str(&format!("\n[File encoding: {name}]"));
    }
    Ok(out)
}

/// The lines of a read window and its paging footer.
fn format_lines(page: &ReadPage, read_limit: u64) -> Result<String, FsError> {
    if page.blank {
        return Ok("System reminder: File exists but has empty contents".to_string());
    }
    if let Some(total) = page.total.filter(|t| page.offset >= *t) {
        return Err(FsError::OffsetPastEnd {
            offset: page.offset,
            total,
        });
    }
    let mut out = String::new();
    let mut chars = 0usize;
    let mut bytes = 0u64;
    let mut shown = 0usize;
    for (i, line) in page.lines.iter().enumerate() {
        let n = page.offset + i + 1;
        let formatted = format_line(n, line);
        let added = formatted.chars().count() + usize::from(shown > 0);
        let added_bytes = (formatted.len() + usize::from(shown > 0)) as u64;
        let cut = if shown == 0 {
            None
        } else if chars + added > MAX_READ_CHARS {
            Some("50,000 chars".to_string())
        } else if bytes + added_bytes > read_limit {
            Some(format!("the read limit of {read_limit} bytes"))
        } else {
            None
        };
        if let Some(at) = cut {
            let (a, b) = (page.offset + 1, page.offset + shown);
            out.push_str(&format!(
                "\n[Output truncated at {at}. Showing lines {a}-{b}{}. Use offset={b} to read more.]",
                of_total(page.total)
            ));
            return Ok(out);
        }
        if shown > 0 {
            out.push('\n');
        }
        out.push_str(&formatted);
        chars += added;
        bytes += added_bytes;
        shown += 1;
    }
    let last = page.offset + shown;
    if page.total.is_none_or(|total| last < total) {
        out.push_str(&format!(
            "\n[Showing lines {}-{last}{}. Use offset={last} to read more.]",
            page.offset + 1,
            of_total(page.total)
        ));
    }
    Ok(out)
}
