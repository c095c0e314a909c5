//! Byte-exact helpers shared by the source formats: lines with their byte spans, YAML front
//! matter, UTF-8 checks that name the offending line, and kebab-casing of relation types.

use serde_json::{Map, Value};
use yaml_rust2::{Yaml, YamlLoader};

use super::Issue;

/// One line of a source file: its text without the line terminator, its 1-based number and
/// the byte offset where it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Line<'a> {
    pub text: &'a str,
    pub number: u64,
    pub start: usize,
}

impl Line<'_> {
    /// The byte span of `part`, a sub-slice of this line's text.
    pub fn span_of(&self, part: &str) -> (u64, u64) {
        let offset = part.as_ptr() as usize - self.text.as_ptr() as usize;
        let start = self.start + offset;
        (start as u64, (start + part.len()) as u64)
    }

    /// The span of the whole line, terminator excluded.
    pub fn span(&self) -> (u64, u64) {
        self.span_of(self.text)
    }
}

/// The lines of `text`, `\n` or `\r\n` terminated.
pub(crate) fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
    let mut start = 0;
    text.split_inclusive('\n').zip(1..).map(move |(raw, number)| {
        let line = Line {
            text: raw
                .strip_suffix('\n')
                .map_or(raw, |t| t.strip_suffix('\r').unwrap_or(t)),
            number,
            start,
        };
        start += raw.len();
        line
    })
}

/// `bytes` as UTF-8, or an issue naming the line of the first invalid byte.
pub(crate) fn utf8<'a>(bytes: &'a [u8], file: &str) -> Result<&'a str, Issue> {
    std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()].iter().filter(|b| **b == b'\n').count() as u64 + 1;
        Issue::at(file, Some(line), format!("invalid UTF-8 at byte {}", e.valid_up_to()))
    })
}

/// YAML front matter: the text between a first line `---` and the next `---` (or `...`).
#[derive(Debug, Default)]
pub(crate) struct FrontMatter {
    /// The parsed mapping (empty when there is none).
    pub fields: Map<String, Value>,
    /// The 1-based number of the first body line after the front matter.
    pub body_line: u64,
}

impl FrontMatter {
    pub fn str(&self, key: &str) -> Option<&str> {
        self.fields.get(key).and_then(Value::as_str)
    }
}

/// Reads the front matter of `text`. Broken YAML, a mapping that is not one, or a block that
/// never closes is an issue at its line.
pub(crate) fn front_matter(text: &str, file: &str) -> Result<FrontMatter, Issue> {
    let mut all = lines(text);
    match all.next() {
        Some(first) if first.text.trim_end() == "---" => {}
        _ => return Ok(FrontMatter::default()),
    }
    let mut yaml = String::new();
    for line in all {
        if matches!(line.text.trim_end(), "---" | "...") {
            let fields = parse_yaml(&yaml, file)?;
            return Ok(FrontMatter {
                fields,
                body_line: line.number + 1,
            });
        }
        yaml.push_str(line.text);
        yaml.push('\n');
    }
    Err(Issue::at(file, Some(1), "front matter opened by `---` is never closed"))
}

fn parse_yaml(yaml: &str, file: &str) -> Result<Map<String, Value>, Issue> {
    let documents = YamlLoader::load_from_str(yaml).map_err(|e| {
        // The YAML starts on line 2 of the file; the scanner counts lines from 1.
        let line = e.marker().line() as u64 + 1;
        Issue::at(file, Some(line), format!("broken front matter: {}", e.info()))
    })?;
    match documents.into_iter().next().map(to_json) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(_) => Err(Issue::at(
            file,
            Some(2),
            "broken front matter: not a mapping of keys to values",
        )),
    }
}

fn to_json(yaml: Yaml) -> Value {
    match yaml {
        Yaml::Real(text) => text.parse::<f64>().map_or(Value::String(text), Value::from),
        Yaml::Integer(n) => Value::from(n),
        Yaml::String(s) => Value::String(s),
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Array(items) => Value::Array(items.into_iter().map(to_json).collect()),
        Yaml::Hash(hash) => Value::Object(
            hash.into_iter()
                .map(|(key, value)| (key_text(key), to_json(value)))
                .collect(),
        ),
        Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => Value::Null,
    }
}

fn key_text(key: Yaml) -> String {
    match key {
        Yaml::String(s) | Yaml::Real(s) => s,
        Yaml::Integer(n) => n.to_string(),
        Yaml::Boolean(b) => b.to_string(),
        other => format!("{other:?}"),
    }
}

/// `worksAt`, `works_at` and `Works At` all become `works-at`.
pub(crate) fn kebab(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut previous_lower = false;
    for c in name.trim().chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous_lower && !out.ends_with('-') {
                out.push('-');
            }
            out.extend(c.to_lowercase());
            previous_lower = c.is_lowercase() || c.is_numeric();
        } else {
            if !out.is_empty() && !out.ends_with('-') {
                out.push('-');
            }
            previous_lower = false;
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    out
}

/// At most `max` bytes of `text`'s first line, cut on a character boundary.
pub(crate) fn short_title(text: &str, max: usize) -> String {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    if first.len() <= max {
        return first.to_owned();
    }
    let mut end = max;
    while !first.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &first[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_carry_their_byte_spans_with_either_terminator() {
        let text = "a\r\nbc\nd";
        let all: Vec<_> = lines(text).collect();
        assert_eq!(all.len(), 3);
        assert_eq!((all[1].text, all[1].number, all[1].span()), ("bc", 2, (3, 5)));
        assert_eq!(&text[4..5], "c");
        assert_eq!(all[1].span_of(&all[1].text[1..]), (4, 5));
        assert_eq!(all[2].span(), (6, 7));
    }

    #[test]
    fn relation_types_are_kebab_cased() {
        assert_eq!(kebab("works_at"), "works-at");
        assert_eq!(kebab("worksAt"), "works-at");
        assert_eq!(kebab("Works At"), "works-at");
        assert_eq!(kebab("depends-on"), "depends-on");
        assert_eq!(kebab("HTTPClient"), "httpclient");
    }

    #[test]
    fn front_matter_is_parsed_and_broken_yaml_names_its_line() {
        let ok = front_matter("---\ntitle: A\ntags: [x, y]\n---\nbody\n", "f.md").unwrap();
        assert_eq!(ok.str("title"), Some("A"));
        assert_eq!(ok.fields["tags"], serde_json::json!(["x", "y"]));
        assert_eq!(ok.body_line, 5);
        let none = front_matter("# no front matter\n", "f.md").unwrap();
        assert!(none.fields.is_empty());
        let broken = front_matter("---\ntitle: A\ntags: [x, y\n---\n", "f.md").unwrap_err();
        assert_eq!(broken.file, "f.md");
        assert!(broken.message.contains("broken front matter"), "{}", broken.message);
        let open = front_matter("---\ntitle: A\n", "f.md").unwrap_err();
        assert!(open.message.contains("never closed"));
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let issue = utf8(b"ok\nok\n\xff\n", "x.md").unwrap_err();
        assert_eq!(issue.line, Some(3));
    }
}
