//! Highlighted code blocks on a terminal: the fenced code of an answer,
//! coloured by syntect (its bundled Sublime syntaxes and themes), the
//! prose around it left to termimad.
//!
//! ```text
//!  answer chunk ─▶ split_fences ─▶ Prose ───────────────▶ termimad
//!                               └▶ Code { lang, code } ─▶ highlight(lang) ─▶ 24-bit (or 256) colour
//!                                                  unknown language ─▶ termimad, as before
//! ```
//!
//! Only on a colour terminal (see [`crate::console::Look`]): piped output,
//! `NO_COLOR` and `--no-color` never come here. Every highlighted line
//! ends with a reset, so a turn cut short leaves no colour behind.

use std::sync::OnceLock;

use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Style, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

/// The theme of code blocks (readable on dark and light backgrounds
/// alike: foreground colours only).
const THEME: &str = "base16-ocean.dark";

/// A piece of Markdown: prose, or a fenced code block.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Segment<'a> {
    /// Anything but fenced code.
    Prose(&'a str),
    /// A fenced block: its language (the info string's first word), its
    /// code, and the whole block as written (fences included).
    Code {
        /// `rust`, `py`, ... or empty.
        lang: &'a str,
        /// The lines between the fences.
        code: &'a str,
        /// The block with its fences.
        raw: &'a str,
    },
}

/// The fence that opens a code block on this line (`` ``` `` or `~~~`,
/// up to three spaces in), and its info string.
fn opening_fence(line: &str) -> Option<(&str, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let marker = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = rest.len() - rest.trim_start_matches(marker).len();
    if len < 3 {
        return None;
    }
    let info = rest[len..].trim();
    if marker == '`' && info.contains('`') {
        return None;
    }
    Some((&rest[..len], info))
}

/// Splits Markdown into prose and fenced code blocks (an unclosed fence
/// runs to the end).
pub(crate) fn split_fences(text: &str) -> Vec<Segment<'_>> {
    let mut segments = Vec::new();
    let mut prose_start = 0;
    let mut pos = 0;
    let mut open: Option<(usize, usize, &str, &str)> = None; // start, code start, fence, lang
    for line in text.split_inclusive('\n') {
        let line_start = pos;
        pos += line.len();
        match open {
            None => {
                if let Some((fence, info)) = opening_fence(line.trim_end_matches(['\n', '\r'])) {
                    if line_start > prose_start {
                        segments.push(Segment::Prose(&text[prose_start..line_start]));
                    }
                    let lang = info.split_whitespace().next().unwrap_or("");
                    open = Some((line_start, pos, fence, lang));
                }
            }
            Some((start, code_start, fence, lang)) => {
                let trimmed = line.trim();
                let closes = trimmed.starts_with(fence)
                    && trimmed
                        .trim_start_matches(fence.chars().next().unwrap_or('`'))
                        .is_empty();
                if closes {
                    segments.push(Segment::Code {
                        lang,
                        code: &text[code_start..line_start],
                        raw: &text[start..pos],
                    });
                    open = None;
                    prose_start = pos;
                }
            }
        }
    }
    if let Some((start, code_start, _, lang)) = open {
        segments.push(Segment::Code {
            lang,
            code: &text[code_start.min(text.len())..],
            raw: &text[start..],
        });
    } else if prose_start < text.len() {
        segments.push(Segment::Prose(&text[prose_start..]));
    }
    segments
}

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn theme() -> Option<&'static Theme> {
    static THEMES: OnceLock<ThemeSet> = OnceLock::new();
    THEMES
        .get_or_init(ThemeSet::load_defaults)
        .themes
        .get(THEME)
}

/// Whether the terminal says it shows 24-bit colour (`COLORTERM`).
pub(crate) fn truecolor() -> bool {
    std::env::var("COLORTERM").is_ok_and(|v| v == "truecolor" || v == "24bit")
}

/// `code` in colour for a terminal, `None` when `lang` is not a language
/// syntect knows (the block is then shown as before).
pub(crate) fn highlight(lang: &str, code: &str, truecolor: bool) -> Option<String> {
    if lang.is_empty() {
        return None;
    }
    let set = syntaxes();
    let syntax = set.find_syntax_by_token(lang)?;
    let mut lines = HighlightLines::new(syntax, theme()?);
    let mut out = String::with_capacity(code.len() * 3);
    for line in LinesWithEndings::from(code) {
        let pieces = lines.highlight_line(line, set).ok()?;
        for (style, text) in pieces {
            let text = text.trim_end_matches(['\n', '\r']);
            if text.is_empty() {
                continue;
            }
            out.push_str(&escape(style, truecolor));
            out.push_str(text);
        }
        out.push_str("\x1b[0m\n");
    }
    Some(out)
}

/// The ANSI sequence of a style's foreground (and bold, italic,
/// underline).
fn escape(style: Style, truecolor: bool) -> String {
    let c = style.foreground;
    let mut seq = if truecolor {
        format!("\x1b[0;38;2;{};{};{}", c.r, c.g, c.b)
    } else {
        format!("\x1b[0;38;5;{}", ansi256(c.r, c.g, c.b))
    };
    if style.font_style.contains(FontStyle::BOLD) {
        seq.push_str(";1");
    }
    if style.font_style.contains(FontStyle::ITALIC) {
        seq.push_str(";3");
    }
    if style.font_style.contains(FontStyle::UNDERLINE) {
        seq.push_str(";4");
    }
    seq.push('m');
    seq
}

/// The nearest colour of the xterm 256-colour cube (or its grey ramp).
fn ansi256(r: u8, g: u8, b: u8) -> u8 {
    let level = |v: u8| -> u8 {
        if v < 48 {
            0
        } else if v < 115 {
            1
        } else {
            (v - 35) / 40
        }
    };
    let (lr, lg, lb) = (level(r), level(g), level(b));
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    if max - min < 10 {
        // A grey: the 24-step ramp is finer than the cube's greys.
        let avg = (u16::from(r) + u16::from(g) + u16::from(b)) / 3;
        if avg < 8 {
            return 16;
        }
        if avg > 238 {
            return 231;
        }
        return 232 + ((avg - 8) / 10).min(23) as u8;
    }
    16 + 36 * lr + 6 * lg + lb
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_split_prose_from_code() {
        let text = "Look:\n```rust\nfn f() {}\n\nlet x = 1;\n```\nDone.\n";
        assert_eq!(
            split_fences(text),
            [
                Segment::Prose("Look:\n"),
                Segment::Code {
                    lang: "rust",
                    code: "fn f() {}\n\nlet x = 1;\n",
                    raw: "```rust\nfn f() {}\n\nlet x = 1;\n```\n",
                },
                Segment::Prose("Done.\n"),
            ]
        );
        // An unclosed fence runs to the end; `~~~` and info words work.
        assert_eq!(
            split_fences("~~~py title\nprint(1)\n"),
            [Segment::Code {
                lang: "py",
                code: "print(1)\n",
                raw: "~~~py title\nprint(1)\n",
            }]
        );
        // A shorter or other fence does not close; inline code is no fence.
        assert_eq!(split_fences("````\n```\n````\n").len(), 1);
        assert_eq!(split_fences("``` a`b\n"), [Segment::Prose("``` a`b\n")]);
    }

    #[test]
    fn known_languages_are_coloured_line_by_line() {
        let out = highlight("rust", "fn main() {\n    let x = 1;\n}\n", true).unwrap();
        assert!(out.contains("\x1b[0;38;2;"), "{out:?}");
        assert_eq!(out.lines().count(), 3);
        assert!(out.lines().all(|l| l.ends_with("\x1b[0m")), "{out:?}");
        let plain = regex::Regex::new("\x1b\\[[0-9;]*m")
            .unwrap()
            .replace_all(&out, "");
        assert_eq!(plain, "fn main() {\n    let x = 1;\n}\n");
        let out256 = highlight("rs", "fn main() {}\n", false).unwrap();
        assert!(out256.contains("\x1b[0;38;5;"), "{out256:?}");
        assert!(highlight("no-such-language", "x\n", true).is_none());
        assert!(highlight("", "x\n", true).is_none());
    }

    #[test]
    fn the_256_colour_cube_is_near() {
        assert_eq!(ansi256(0, 0, 0), 16);
        assert_eq!(ansi256(255, 255, 255), 231);
        assert_eq!(ansi256(255, 0, 0), 196);
        assert_eq!(ansi256(0, 0, 255), 21);
        assert_eq!(ansi256(128, 128, 128), 244);
    }
}
