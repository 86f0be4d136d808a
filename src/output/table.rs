//! kubectl-style tables: no borders, upper-case headers, three spaces between columns.
//! Given a width (a terminal's), columns too wide to fit share what is left and their
//! text wraps at word boundaries inside them; piped, nothing is wrapped (as kubectl).

use std::borrow::Cow;
use std::io::Write;

use unicode_width::UnicodeWidthStr;

use super::Printer;

/// How a cell is coloured when colour is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tone {
    #[default]
    Plain,
    Good,
    Warn,
    Bad,
    Dim,
}

#[derive(Debug, Clone, Default)]
pub struct Styled {
    pub text: String,
    pub tone: Tone,
}

impl From<&str> for Styled {
    fn from(text: &str) -> Styled {
        Styled { text: text.into(), tone: Tone::Plain }
    }
}

impl From<String> for Styled {
    fn from(text: String) -> Styled {
        Styled { text, tone: Tone::Plain }
    }
}

pub fn styled(text: impl Into<String>, tone: Tone) -> Styled {
    Styled { text: text.into(), tone }
}

pub struct Grid {
    headers: Vec<&'static str>,
    rows: Vec<Vec<Styled>>,
}

impl Grid {
    pub fn new(headers: Vec<&'static str>) -> Grid {
        Grid { headers, rows: Vec::new() }
    }

    pub fn row(&mut self, cells: Vec<Styled>) {
        debug_assert_eq!(cells.len(), self.headers.len());
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Renders with a trailing newline; empty string when there are no rows. Written
    /// out rather than through comfy-table: check prints tens of thousands of rows, and
    /// the layout is simple (comfy-table stays the reference in the tests).
    pub fn render(self, p: &Printer) -> String {
        in_memory(|text| self.write_to(p, text))
    }

    /// Writes the rendered table to `out`, 64 KiB of rows at a time. check -A's table is
    /// 40,000 rows, padded to its longest finding: rendered whole, about 18 MB of memory
    /// touched once (4,500 page faults) only to be copied out.
    pub fn write_to(&self, p: &Printer, out: &mut impl Write) -> std::io::Result<()> {
        let (no_headers, color) = (p.no_headers, p.color);
        if self.rows.is_empty() {
            return Ok(());
        }
        let header_row: Vec<Styled> = self.headers.iter().map(|h| Styled::from(*h)).collect();
        let header: &[Vec<Styled>] = if no_headers { &[] } else { std::slice::from_ref(&header_row) };
        let columns = self.headers.len();
        // At least one column wide even when empty (comfy-table's rule, kept for equal output).
        let mut widths = vec![1; columns];
        for row in header.iter().chain(&self.rows) {
            for (i, c) in row.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(c.text.split('\n').map(width).max().unwrap_or(0));
            }
        }
        let mut narrowed = false;
        if let Some(limit) = p.width.filter(|&l| widths.iter().sum::<usize>() + 3 * (columns - 1) > l) {
            // Floors a column is not narrowed below, tried in turn until they fit: its header
            // or its longest word up to 12 columns (kinds and names stay whole); its header's
            // longest word or its longest piece between seams up to 12 (LIVE PODS takes two
            // lines, kube-controller-manager breaks after a hyphen, never inside a piece); its
            // header's longest word alone.
            let header_words: Vec<usize> =
                self.headers.iter().map(|h| h.split(' ').map(width).max().unwrap_or(0)).collect();
            let (mut floors, mut pieces) =
                (self.headers.iter().map(|h| width(h)).collect::<Vec<_>>(), header_words.clone());
            for row in &self.rows {
                for (i, c) in row.iter().enumerate().take(columns) {
                    let longest = c.text.split([' ', '\n']).map(width).max().unwrap_or(0);
                    floors[i] = floors[i].max(longest.min(12));
                    if pieces[i] < 12 && longest > pieces[i] {
                        let piece = c.text.lines().flat_map(words_with_seams).map(|w| w.width()).max().unwrap_or(0);
                        pieces[i] = pieces[i].max(piece.min(12));
                    }
                }
            }
            let tiers = [(floors, 8), (pieces, 4), (header_words, 4), (vec![1; columns], 1)];
            let fitted = fit(&widths, &tiers, limit);
            narrowed = fitted != widths;
            widths = fitted;
        }
        let mut text = String::with_capacity(CHUNK + widths.iter().sum::<usize>() + 3 * columns + 1);
        for row in header.iter().chain(&self.rows) {
            // Piped, or when everything fits, the rows go out as they are: no cell is measured
            // twice (check -A's 40,000 rows).
            let row: Cow<[Styled]> = if narrowed { wrapped(row, &widths) } else { Cow::Borrowed(row) };
            write_row(&row, &widths, color, &mut text);
            if text.len() >= CHUNK {
                out.write_all(text.as_bytes())?;
                text.clear();
            }
        }
        out.write_all(text.as_bytes())
    }
}

/// Column widths that fit `limit` (gaps included). Each tier is a floor a column and the
/// least that floor may be (never more than the column's text); the first tier whose floors
/// fit is used. Above the floors the room is shared out by raising the narrowest column still
/// short of its text first (max-min fairness, as comfy-table's dynamic arrangement aims for):
/// narrow columns keep their width, wide ones share the rest evenly. Only a terminal too
/// narrow for every tier (a column and a gap for each column) keeps the natural widths.
pub fn fit(natural: &[usize], tiers: &[(Vec<usize>, usize)], limit: usize) -> Vec<usize> {
    let gaps = 3 * natural.len().saturating_sub(1);
    let room = limit.saturating_sub(gaps);
    if natural.iter().sum::<usize>() <= room {
        return natural.to_vec();
    }
    let at_least = |(floors, least): &(Vec<usize>, usize)| -> Vec<usize> {
        natural.iter().zip(floors).map(|(n, f)| (*n).min((*f).max(*least))).collect()
    };
    let Some(mut widths) = tiers.iter().map(at_least).find(|w| w.iter().sum::<usize>() <= room) else {
        return natural.to_vec();
    };
    let mut extra = room - widths.iter().sum::<usize>();
    while extra > 0 {
        let short: Vec<usize> = (0..widths.len()).filter(|&i| widths[i] < natural[i]).collect();
        let Some(low) = short.iter().map(|&i| widths[i]).min() else { break };
        let level: Vec<usize> = short.iter().copied().filter(|&i| widths[i] == low).collect();
        // Raise the lowest level to the next one up, to the first text it reaches, or as far
        // as the room goes; the leftmost columns take what does not divide evenly.
        let next = short.iter().map(|&i| widths[i]).filter(|&w| w > low).min().unwrap_or(usize::MAX);
        let reach = level.iter().map(|&i| natural[i]).min().unwrap_or(low);
        let step = (next.min(reach) - low).min(extra / level.len());
        if step == 0 {
            for &i in level.iter().take(extra) {
                widths[i] += 1;
            }
            break;
        }
        for &i in &level {
            widths[i] += step;
        }
        extra -= step * level.len();
    }
    widths
}

/// The row with each cell wider than its column wrapped at word boundaries (a word longer
/// than the column is broken, never cut); borrowed when every cell fits, as nearly all do.
fn wrapped<'a>(row: &'a [Styled], widths: &[usize]) -> Cow<'a, [Styled]> {
    let too_wide = |(c, w): (&Styled, &usize)| c.text.split('\n').any(|l| width(l) > *w);
    if !row.iter().zip(widths).any(too_wide) {
        return Cow::Borrowed(row);
    }
    let cells = row
        .iter()
        .zip(widths)
        .map(|(c, &w)| {
            if !too_wide((c, &w)) {
                return c.clone();
            }
            let lines: Vec<String> = c.text.split('\n').flat_map(|l| wrap(l, w)).collect();
            Styled { text: lines.join("\n"), tone: c.tone }
        })
        .collect();
    Cow::Owned(cells)
}

/// How every human output wraps: at spaces; a word wider than the line (a field path, a pod
/// name, a kind) at its own seams (before `.`, `[` and a capital inside a word, after
/// `/`, `,` and `-`), and never with a hyphen added, since names already hold hyphens. Only a seamless
/// word wider than the line is cut at the width.
pub fn wrap_with(text: &str, limit: usize, indent: &str) -> Vec<String> {
    let at_spaces = textwrap::Options::new(limit)
        .subsequent_indent(indent)
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        .break_words(false);
    // Leading spaces (a tree's indent) stay on the first line instead of ending it; a painted
    // line's come after its colour code, which is moved past them (on its own, the code was a
    // word that ended the first line).
    let text = spaces_first(text);
    let text = text.as_ref();
    let body = text.trim_start_matches(' ');
    let first = &text[..text.len() - body.len()];
    let at_spaces = at_spaces.initial_indent(first);
    let mut lines = Vec::new();
    for (i, line) in textwrap::wrap(body, at_spaces).into_iter().enumerate() {
        if width(&line) <= limit {
            lines.push(line.into_owned());
            continue;
        }
        // The line holds a word wider than the width: that line again, broken at seams. Its
        // own indent (a continuation's) is already in it.
        let (lead, rest) = line.split_at(line.len() - line.trim_start().len());
        let lead = if i == 0 { lead.to_string() } else { indent.to_string() };
        let at_seams = textwrap::Options::new(limit)
            .initial_indent(&lead)
            .subsequent_indent(indent)
            .word_separator(textwrap::WordSeparator::Custom(words_with_seams))
            .word_splitter(textwrap::WordSplitter::NoHyphenation);
        lines.extend(textwrap::wrap(rest, at_seams).into_iter().map(Cow::into_owned));
    }
    lines
}

/// Words at spaces, each further split at its seams; the pieces of one word carry no
/// whitespace between them, so on one line they join back into the word.
fn words_with_seams(line: &str) -> Box<dyn Iterator<Item = textwrap::core::Word<'_>> + '_> {
    Box::new(textwrap::WordSeparator::AsciiSpace.find_words(line).flat_map(|word| {
        let text = word.word;
        // The word and its trailing spaces, as one slice of the line.
        let at = text.as_ptr() as usize - line.as_ptr() as usize;
        let whole = &line[at..at + text.len() + word.whitespace.len()];
        let mut starts = vec![0];
        // A colour code is part of the character after it: no seam inside or before one.
        let (mut escape_end, mut before, mut seam_at) = (0, ' ', None);
        for (i, c) in text.char_indices() {
            if c == '\x1b' && i >= escape_end {
                escape_end = i + escape_len(&text[i..]);
                // A seam before the character after it falls before the code instead.
                seam_at = seam_at.or(Some(i));
            }
            if i < escape_end {
                continue;
            }
            let at = seam_at.take().unwrap_or(i);
            let camel = c.is_ascii_uppercase() && before.is_ascii_lowercase();
            if at > 0 && (camel || matches!(c, '.' | '[') || matches!(before, '/' | ',' | '-')) {
                starts.push(at);
            }
            before = c;
        }
        let ends: Vec<usize> = starts.iter().skip(1).copied().chain([whole.len()]).collect();
        starts.into_iter().zip(ends).map(move |(a, b)| textwrap::core::Word::from(&whole[a..b])).collect::<Vec<_>>()
    }))
}

/// `text` broken into lines of at most `limit` columns at word boundaries.
pub fn wrap(text: &str, limit: usize) -> Vec<String> {
    if width(text) <= limit {
        return vec![text.to_string()];
    }
    let lead = &text[..text.len() - text.trim_start_matches(' ').len()];
    wrap_with(text, limit.max(1), lead)
}

/// What `write` writes, as a String (the tables' `render`).
fn in_memory(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut text = Vec::new();
    write(&mut text).expect("writing to memory");
    String::from_utf8(text).expect("cells are strings")
}

/// Bytes of rendered rows gathered before each write.
const CHUNK: usize = 64 * 1024;

fn write_row(row: &[Styled], widths: &[usize], color: bool, text: &mut String) {
    let columns = widths.len();
    // A cell with several lines makes its row that many lines high, as in comfy-table.
    let height = row.iter().map(|c| c.text.split('\n').count()).max().unwrap_or(1);
    for line in 0..height {
        let start = text.len();
        for (i, c) in row.iter().enumerate().take(columns) {
            let part = c.text.split('\n').nth(line).unwrap_or("");
            if color && !part.is_empty() {
                text.push_str(&super::paint(part, c.tone, true));
            } else {
                text.push_str(part);
            }
            if i + 1 < columns {
                pad(text, widths[i] - width(part) + 3);
            }
        }
        let kept = text[start..].trim_end().len();
        text.truncate(start + kept);
        text.push('\n');
    }
}

/// Appends `n` spaces: a large table is mostly padding, and pushed a char at a time it cost
/// more than the cells.
fn pad(text: &mut String, mut n: usize) {
    const SPACES: &str = "                                                                ";
    while n > 0 {
        let k = n.min(SPACES.len());
        text.push_str(&SPACES[..k]);
        n -= k;
    }
}

/// Columns `text` takes on a terminal. Printable ASCII (nearly every cell) is one column a
/// byte, checked far faster than a Unicode width lookup per character. Colour codes take no
/// columns: a painted line is as wide as the same line unpainted (a line measured with its
/// escapes was wrapped a second time, ten columns early).
pub fn width(text: &str) -> usize {
    // Folded without stopping early, which the compiler turns into wide comparisons: every
    // cell is measured twice, and findings run to hundreds of characters.
    let printable = text.bytes().fold(true, |all, b| all & (b' '..=b'~').contains(&b));
    if printable {
        text.len()
    } else if text.contains('\x1b') {
        unpainted(text).map(UnicodeWidthStr::width).sum()
    } else {
        UnicodeWidthStr::width(text)
    }
}

/// The pieces of `text` between its escape sequences: CSI (`ESC [ ... final`, the colours
/// owo-colors writes) and any other two-character `ESC x`.
fn unpainted(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let Some(at) = rest.find('\x1b') else {
            return Some(std::mem::take(&mut rest));
        };
        let (before, escape) = rest.split_at(at);
        rest = &escape[escape_len(escape)..];
        Some(before)
    })
}

/// The length in bytes of the escape sequence `text` starts with (it starts with ESC).
fn escape_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    match bytes.get(1) {
        // CSI: parameters and intermediates, then one final byte in @..~.
        Some(b'[') => bytes[2..].iter().position(|b| (0x40..=0x7e).contains(b)).map_or(bytes.len(), |i| i + 3),
        Some(b) if b.is_ascii() => 2,
        _ => 1,
    }
}

/// `text` with the spaces that follow its leading colour codes put before them.
fn spaces_first(text: &str) -> Cow<'_, str> {
    let mut codes = 0;
    while text[codes..].starts_with('\x1b') {
        codes += escape_len(&text[codes..]);
    }
    let spaces = text[codes..].len() - text[codes..].trim_start_matches(' ').len();
    if codes == 0 || spaces == 0 {
        return Cow::Borrowed(text);
    }
    Cow::Owned(format!("{}{}{}", &text[codes..codes + spaces], &text[..codes], &text[codes + spaces..]))
}

/// `text` without its colour codes: what a terminal shows of it.
pub fn strip_colour(text: &str) -> String {
    unpainted(text).collect()
}

/// A command's table output: a grid, what to say when it has no rows, and lines under it
/// (summaries, findings). Kept apart so a fleet run can merge grids under a CONTEXT column.
pub struct Table {
    pub grid: Grid,
    pub empty: Option<String>,
    pub lines: Vec<String>,
}

impl Table {
    pub fn new(grid: Grid) -> Table {
        Table { grid, empty: None, lines: Vec::new() }
    }

    pub fn render(self, p: &Printer) -> String {
        in_memory(|text| self.write_to(p, text))
    }

    pub fn write_to(&self, p: &Printer, out: &mut impl Write) -> std::io::Result<()> {
        match (&self.empty, self.grid.is_empty()) {
            (Some(empty), true) => write_lines(out, empty, p)?,
            _ => self.grid.write_to(p, out)?,
        }
        for line in &self.lines {
            write_lines(out, line, p)?;
        }
        Ok(())
    }
}

/// A line under a table, wrapped to the width; a continuation keeps the line's indent plus
/// two columns, so a wrapped line reads as one.
fn write_lines(out: &mut impl Write, line: &str, p: &Printer) -> std::io::Result<()> {
    for part in wrap_indented(line, p.width) {
        writeln!(out, "{part}")?;
    }
    Ok(())
}

/// `text` wrapped to `limit` (unlimited without one), continuation lines `indent` columns in
/// (where its text starts), and at least `room` columns left for text after the indent.
pub fn wrap_under(text: &str, limit: Option<usize>, indent: usize, room: usize) -> Vec<String> {
    match limit {
        Some(limit) if width(text) > limit => wrap_with(text, limit.max(indent + room), &" ".repeat(indent)),
        _ => vec![text.to_string()],
    }
}

/// `line` wrapped to `limit` (unlimited without one), continuations indented past its own
/// leading spaces. Colour codes are not counted by textwrap's width, so painted text wraps too.
pub fn wrap_indented(line: &str, limit: Option<usize>) -> Vec<String> {
    // The indent as shown: a painted line's leading spaces come after its colour code.
    let shown = unpainted(line).find(|piece| !piece.is_empty()).unwrap_or("");
    wrap_under(line, limit, shown.len() - shown.trim_start().len() + 2, 8)
}

/// Human text fitted to `limit`: each line wider than it wrapped under its own indent;
/// the rest (tables already fitted) unchanged.
pub fn fit_lines(text: &str, limit: Option<usize>) -> String {
    if limit.is_none() {
        return text.to_string();
    }
    let mut fitted = String::with_capacity(text.len());
    for line in text.lines() {
        for part in wrap_indented(line, limit) {
            fitted.push_str(&part);
            fitted.push('\n');
        }
    }
    fitted
}

/// Several contexts' tables as one: a leading CONTEXT column over every grid (all have the
/// same headers), then each context's lines prefixed with its name.
pub fn merge(tables: Vec<(String, Table)>, p: &Printer) -> String {
    let headers = tables.first().map(|(_, t)| t.grid.headers.clone()).unwrap_or_default();
    let mut merged = Grid::new([vec!["CONTEXT"], headers].concat());
    let mut lines = Vec::new();
    for (context, table) in tables {
        // A context with no rows says so, as it would alone ("No leases found in ...").
        let empty = table.empty.filter(|_| table.grid.is_empty());
        for row in table.grid.rows {
            merged.row([vec![Styled::from(context.as_str())], row].concat());
        }
        let said = empty.into_iter().chain(table.lines).filter(|l| !l.is_empty());
        lines.extend(said.map(|l| format!("{context}: {l}")));
    }
    let mut text = merged.render(p);
    if !text.is_empty() && !lines.is_empty() {
        text.push('\n');
    }
    for line in lines {
        for part in wrap_indented(&line, p.width) {
            text.push_str(&part);
            text.push('\n');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use comfy_table::{Cell, CellAlignment, ColumnConstraint, ContentArrangement, presets};
    use proptest::prelude::*;

    fn plain(width: Option<usize>) -> Printer {
        Printer::plain(crate::cli::OutputFormat::Table, width)
    }

    /// The layout as comfy-table draws it (no colour): the reference for [`Grid::render`].
    fn comfy(headers: &[&str], rows: &[Vec<String>], no_headers: bool) -> String {
        if rows.is_empty() {
            return String::new();
        }
        let mut table = comfy_table::Table::new();
        table.load_preset(presets::NOTHING).set_content_arrangement(ContentArrangement::Disabled).force_no_tty();
        if !no_headers {
            table.set_header(headers.iter().map(Cell::new));
        }
        for row in rows {
            table.add_row(row.iter().map(Cell::new));
        }
        let last = headers.len().saturating_sub(1);
        for (i, column) in table.column_iter_mut().enumerate() {
            column.set_padding((0, if i == last { 0 } else { 3 }));
            column.set_cell_alignment(CellAlignment::Left);
            column.set_constraint(ColumnConstraint::ContentWidth);
        }
        let text: String = table.lines().map(|l| l.trim_end().to_string() + "\n").collect();
        if text.is_empty() { "\n".into() } else { text }
    }

    proptest! {
        #[test]
        fn lays_out_as_comfy_table_does(
            rows in proptest::collection::vec(proptest::collection::vec("[a-z é漢]{0,6}(\n[a-z]{0,3})?", 3), 1..6),
            no_headers in any::<bool>(),
        ) {
            let headers = ["NAME", "A", "LONGER HEADER"];
            let mut g = Grid::new(headers.to_vec());
            for r in &rows {
                g.row(r.iter().map(|c| Styled::from(c.as_str())).collect());
            }
            prop_assert_eq!(g.render(&Printer { no_headers, ..plain(None) }), comfy(&headers, &rows, no_headers));
        }

        #[test]
        fn width_is_the_unicode_width(text in any::<String>(), ascii in "[ -~]{0,40}") {
            prop_assert_eq!(width(&text), UnicodeWidthStr::width(text.as_str()));
            prop_assert_eq!(width(&ascii), UnicodeWidthStr::width(ascii.as_str()));
        }
    }

    proptest! {
        /// Fitted to a width, no line is wider than it, and every word of every cell is
        /// still there (words no longer than the narrowest column: longer ones are broken).
        #[test]
        fn fits_the_width_and_keeps_every_word(
            rows in proptest::collection::vec(proptest::collection::vec("[a-z]{1,8}( [a-z]{1,8}){0,12}", 3), 1..6),
            limit in 40usize..140,
        ) {
            let headers = ["NAME", "A", "LONGER HEADER"];
            let mut g = Grid::new(headers.to_vec());
            for r in &rows {
                g.row(r.iter().map(|c| Styled::from(c.as_str())).collect());
            }
            let text = g.render(&plain(Some(limit)));
            for line in text.lines() {
                prop_assert!(width(line) <= limit, "{line:?} is wider than {limit}");
            }
            let words: Vec<&str> = text.split_whitespace().collect();
            let expected: Vec<&str> =
                headers.iter().flat_map(|h| h.split(' ')).chain(rows.iter().flatten().flat_map(|c| c.split(' '))).collect();
            let mut sorted_words = words.clone();
            let mut sorted_expected = expected.clone();
            sorted_words.sort();
            sorted_expected.sort();
            prop_assert_eq!(sorted_words, sorted_expected);
        }

        /// A table that fits is laid out exactly as without a width.
        #[test]
        fn a_table_that_fits_is_unchanged(rows in proptest::collection::vec(proptest::collection::vec("[a-z ]{0,8}", 2), 1..5)) {
            let render = |p: &Printer| {
                let mut g = Grid::new(vec!["NAME", "VALUE"]);
                for r in &rows {
                    g.row(r.iter().map(|c| Styled::from(c.as_str())).collect());
                }
                g.render(p)
            };
            prop_assert_eq!(render(&plain(Some(80))), render(&plain(None)));
        }
    }

    proptest! {
        /// A painted line wraps exactly as the same line unpainted: colour codes take no
        /// columns, and no seam falls inside one.
        #[test]
        fn painted_lines_wrap_as_plain_ones(
            lead in 0usize..6,
            words in proptest::collection::vec("[a-zA-Z0-9./,=\\[\\]-]{1,24}", 1..14),
            limit in 12usize..90,
            tone in prop_oneof![Just(Tone::Bad), Just(Tone::Warn), Just(Tone::Good), Just(Tone::Dim)],
        ) {
            let line = format!("{}{}", " ".repeat(lead), words.join(" "));
            let painted = crate::output::paint(&line, tone, true);
            prop_assert_eq!(width(&painted), width(&line));
            let plain = wrap_indented(&line, Some(limit));
            let shown: Vec<String> = wrap_indented(&painted, Some(limit)).iter().map(|l| strip_colour(l)).collect();
            prop_assert_eq!(shown, plain);
        }
    }

    #[test]
    fn narrow_columns_keep_their_width_and_wide_ones_share_the_rest() {
        // 100 columns: 6 + 3 + 5 + 3 gaps... the two wide ones split what is left evenly.
        let two =
            |floors: &[usize], tight: &[usize]| [(floors.to_vec(), 8), (tight.to_vec(), 4), (vec![1; floors.len()], 1)];
        assert_eq!(fit(&[6, 5, 200, 150], &two(&[4, 4, 6, 6], &[4, 1, 6, 6]), 100), vec![6, 5, 40, 40]);
        assert_eq!(fit(&[6, 5, 20], &two(&[4, 4, 6], &[4, 4, 6]), 100), vec![6, 5, 20]);
        // A header wider than the share is the column's floor; the others share the rest.
        assert_eq!(fit(&[30, 40, 40], &two(&[20, 6, 6], &[20, 6, 6]), 60), vec![20, 17, 17]);
        // Floors that cannot fit: the next tier's, then the rest shared out, the leftmost
        // column taking what does not divide evenly.
        assert_eq!(fit(&[19, 12, 20, 20], &two(&[12, 9, 12, 12], &[4, 9, 1, 1]), 40), vec![8, 9, 7, 7]);
        // Not even those: down to one column each, still within the limit.
        let w = fit(&[30; 8], &two(&[12; 8], &[9; 8]), 40);
        assert!(w.iter().sum::<usize>() + 21 <= 40, "{w:?}");
        // Narrower than a column and a gap each: natural widths, unwrapped.
        assert_eq!(fit(&[30, 30], &two(&[4, 4], &[4, 4]), 3), vec![30, 30]);
    }

    #[test]
    fn long_lines_wrap_under_their_own_indent() {
        let line = "  owners: 1204 objects of 31 kinds checked, 2 errors, 1 warning";
        assert_eq!(
            wrap_indented(line, Some(30)),
            vec!["  owners: 1204 objects of 31", "    kinds checked, 2 errors, 1", "    warning"]
        );
        assert_eq!(wrap_indented(line, None), vec![line]);
        // A word longer than the column is broken, not cut.
        assert_eq!(wrap("e71e2b9c-uid", 8), vec!["e71e2b9c", "-uid"]);
    }

    #[test]
    fn a_table_of_many_chunks_lays_out_as_comfy_table_does() {
        let headers = ["NAME", "FINDING", "DETAIL"];
        let rows: Vec<Vec<String>> = (0..3000)
            .map(|i| vec![format!("object-{i}"), "x".repeat(i % 97), format!("kubectl coord owners {i}")])
            .collect();
        let mut g = Grid::new(headers.to_vec());
        for r in &rows {
            g.row(r.iter().map(|c| Styled::from(c.as_str())).collect());
        }
        let text = g.render(&plain(None));
        assert!(text.len() > 3 * CHUNK);
        assert_eq!(text, comfy(&headers, &rows, false));
    }

    #[test]
    fn kubectl_layout() {
        let mut g = Grid::new(vec!["NAME", "HOLDER"]);
        g.row(vec!["kube-scheduler".into(), "host_1".into()]);
        g.row(vec!["a".into(), styled("", Tone::Bad)]);
        let text = g.render(&plain(None));
        assert_eq!(text, "NAME             HOLDER\nkube-scheduler   host_1\na\n");
    }

    #[test]
    fn merged_tables_lead_with_the_context() {
        let table = |name: &str, line: &str| {
            let mut g = Grid::new(vec!["NAME"]);
            g.row(vec![name.into()]);
            Table { grid: g, empty: None, lines: vec![String::new(), line.to_string()] }
        };
        let text =
            merge(vec![("a".into(), table("x", "1 lease")), ("bb".into(), table("y", "2 leases"))], &plain(None));
        assert_eq!(text, "CONTEXT   NAME\na         x\nbb        y\n\na: 1 lease\nbb: 2 leases\n");
        let t =
            Table { grid: Grid::new(vec!["NAME"]), empty: Some("No leases found.".into()), lines: vec!["end".into()] };
        assert_eq!(t.render(&plain(None)), "No leases found.\nend\n");
    }

    #[test]
    fn no_headers_and_colour() {
        let mut g = Grid::new(vec!["STATE"]);
        g.row(vec![styled("expired", Tone::Bad)]);
        assert_eq!(g.render(&Printer { no_headers: true, ..plain(None) }), "expired\n");
        let mut g = Grid::new(vec!["STATE"]);
        g.row(vec![styled("expired", Tone::Bad)]);
        assert!(g.render(&Printer { no_headers: true, color: true, ..plain(None) }).contains("\u{1b}["));
    }
}
