//! kubectl-style tables: no borders, upper-case headers, three spaces between columns.

use comfy_table::{Attribute, Cell, CellAlignment, Color, ColumnConstraint, ContentArrangement, Table, presets};

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

    /// Renders with a trailing newline; empty string when there are no rows.
    pub fn render(self, no_headers: bool, color: bool) -> String {
        if self.rows.is_empty() {
            return String::new();
        }
        let mut table = Table::new();
        table.load_preset(presets::NOTHING).set_content_arrangement(ContentArrangement::Disabled);
        if color {
            table.enforce_styling();
        } else {
            table.force_no_tty();
        }
        if !no_headers {
            table.set_header(self.headers.iter().map(Cell::new));
        }
        for row in self.rows {
            table.add_row(row.into_iter().map(|c| cell(c, color)));
        }
        let last = self.headers.len().saturating_sub(1);
        for (i, column) in table.column_iter_mut().enumerate() {
            column.set_padding((0, if i == last { 0 } else { 3 }));
            column.set_cell_alignment(CellAlignment::Left);
            column.set_constraint(ColumnConstraint::ContentWidth);
        }
        let mut text: String = table.lines().map(|l| l.trim_end().to_string() + "\n").collect();
        if text.is_empty() {
            text.push('\n');
        }
        text
    }
}

fn cell(c: Styled, color: bool) -> Cell {
    let cell = Cell::new(c.text);
    if !color {
        return cell;
    }
    match c.tone {
        Tone::Plain => cell,
        Tone::Good => cell.fg(Color::Green),
        Tone::Warn => cell.fg(Color::Yellow),
        Tone::Bad => cell.fg(Color::Red).add_attribute(Attribute::Bold),
        Tone::Dim => cell.add_attribute(Attribute::Dim),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_layout() {
        let mut g = Grid::new(vec!["NAME", "HOLDER"]);
        g.row(vec!["kube-scheduler".into(), "host_1".into()]);
        g.row(vec!["a".into(), styled("", Tone::Bad)]);
        let text = g.render(false, false);
        assert_eq!(text, "NAME             HOLDER\nkube-scheduler   host_1\na\n");
    }

    #[test]
    fn no_headers_and_colour() {
        let mut g = Grid::new(vec!["STATE"]);
        g.row(vec![styled("expired", Tone::Bad)]);
        assert_eq!(g.render(true, false), "expired\n");
        let mut g = Grid::new(vec!["STATE"]);
        g.row(vec![styled("expired", Tone::Bad)]);
        assert!(g.render(true, true).contains("\u{1b}["));
    }
}
