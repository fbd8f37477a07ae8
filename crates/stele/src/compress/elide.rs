//! Text forms without their id (first byte [`ELIDED`]): an import whose ids come from a
//! field stores each record's JSON text with that field cut out, since the block's key holds
//! the id already, and [`restore`] puts the field back where it was when the document is
//! read (`docs/FORMAT.md`, "Stored document values").
//!
//! ```text
//! elided := 0x1E | u8 how | varint at | varint name_len | name | text
//!   how   bit 0: the key is an integer id's key (`crate::ids`), written back as a JSON
//!                integer; else the key's UTF-8 text, written back as a JSON string
//!         bits 1-2: 0 the member was the object's only one, 1 a comma followed it,
//!                2 a comma came before it (it was the last of several)
//!   at    where in `text` the member (`"name":value`, with its comma) goes back
//!   text  the record's JSON text without the member: an object, first byte `{`
//! ```
//!
//! The import keeps an elided form only where the text put back rebuilds exactly the
//! document it made of the record ([`cut`], then the check of
//! [`super::text_form_rebuilds`] on [`restore`]'s text); otherwise the text form or the
//! document goes in whole. Any record may thus be elided or not: the layout needs no
//! collection setting, and documents put later (whole) sit beside elided ones.

use super::header::{corrupt, put_varint};
use crate::Result;
use crate::bytes::Reader;
use crate::ids::{IdKind, int_from_key};

/// First byte of an elided text form: neither a document (`0xB1`), a stream (`0x00-0x0A`)
/// nor a text form (`{`).
pub const ELIDED: u8 = 0x1E;

const INT_KEY: u8 = 1;
const ONLY: u8 = 0;
const COMMA_AFTER: u8 = 1 << 1;
const COMMA_BEFORE: u8 = 2 << 1;

/// Whether a stored block entry is an elided text form.
pub fn is_elided(value: &[u8]) -> bool {
    value.first() == Some(&ELIDED)
}

/// Writes into `out` (cleared first) the elided form of `text` (a record's JSON text, an
/// object, without blanks around it) without its top-level member `name`, whose value is
/// the id of kind `kind`. False, `out` left cleared, if `text` has no such member spelled
/// without escapes (the caller stores the text whole then). The caller checks that
/// [`restore`] rebuilds the document: only the member's place is found here.
pub fn cut(text: &[u8], name: &str, kind: IdKind, out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(m) = find_member(text, name.as_bytes()) else {
        return false;
    };
    let (remove, at, place) = match (m.comma_after, m.comma_before) {
        (Some(c), _) => (m.start..c + 1, m.start, COMMA_AFTER),
        (None, Some(c)) => (c..m.end, c, COMMA_BEFORE),
        (None, None) => (m.start..m.end, m.start, ONLY),
    };
    let how = place
        | match kind {
            IdKind::Int => INT_KEY,
            IdKind::Text => 0,
        };
    let (Some(head), Some(tail)) = (text.get(..remove.start), text.get(remove.end..)) else {
        return false;
    };
    out.push(ELIDED);
    out.push(how);
    put_varint(out, at as u64);
    put_varint(out, name.len() as u64);
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(head);
    out.extend_from_slice(tail);
    true
}

/// Writes into `out` (cleared first) the JSON text of elided form `value` stored under
/// `key`: its text with the member put back. An error if the layout is broken.
pub fn restore(key: &[u8], value: &[u8], out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    let bad = |what: &str| corrupt(0, format!("an elided text form {what}"));
    let mut r = Reader::new(value);
    if r.u8() != Some(ELIDED) {
        return Err(bad("does not start with its mark"));
    }
    let how = r.u8().ok_or_else(|| bad("ends before its header"))?;
    let at = r.varint().ok_or_else(|| bad("ends before its header"))?;
    let name = r.bytes().ok_or_else(|| bad("ends before its field name"))?;
    let name = std::str::from_utf8(name).map_err(|_| bad("names a field that is not UTF-8"))?;
    let text = r.rest();
    let at = usize::try_from(at).map_err(|_| bad("puts its id beyond its text"))?;
    let (Some(head), Some(tail)) = (text.get(..at), text.get(at..)) else {
        return Err(bad("puts its id beyond its text"));
    };
    // The id goes after the text's opening brace: what is put back is an object's text
    // again (a text form, never a form `to_document` would hand out unparsed).
    if how & !(INT_KEY | COMMA_AFTER | COMMA_BEFORE) != 0 || text.first() != Some(&b'{') || at == 0
    {
        return Err(bad("is of an unknown layout"));
    }
    out.reserve(text.len() + name.len() + key.len() + 8);
    out.extend_from_slice(head);
    if how & COMMA_BEFORE != 0 {
        out.push(b',');
    }
    push_json_string(out, name);
    out.push(b':');
    if how & INT_KEY != 0 {
        let n = int_from_key(key).ok_or_else(|| bad("is under a key that is no integer id"))?;
        out.extend_from_slice(n.to_string().as_bytes());
    } else {
        let id = std::str::from_utf8(key).map_err(|_| bad("is under a key that is not UTF-8"))?;
        push_json_string(out, id);
    }
    if how & COMMA_AFTER != 0 {
        out.push(b',');
    }
    out.extend_from_slice(tail);
    Ok(())
}

/// Appends `s` as a JSON string: as it is between quotes when nothing in it needs an
/// escape (most ids: a quarter of the time `write_json_string` took, char by char).
fn push_json_string(out: &mut Vec<u8>, s: &str) {
    if s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        crate::json_text::write_json_string(out, s);
    } else {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    }
}

/// Where a top-level member of an object's JSON text lies.
struct Member {
    /// Its key's opening quote.
    start: usize,
    /// Just past its value.
    end: usize,
    /// The comma after its value, if another member follows.
    comma_after: Option<usize>,
    /// The comma before its key, if another member comes first.
    comma_before: Option<usize>,
}

/// The top-level member of `text` (an object) whose key is exactly `name`, spelled without
/// escapes; `None` if there is none or `text` is not an object as far as scanned.
fn find_member(text: &[u8], name: &[u8]) -> Option<Member> {
    let mut i = skip_blanks(text, 0);
    if text.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut comma_before = None;
    loop {
        i = skip_blanks(text, i);
        if text.get(i) != Some(&b'"') {
            return None;
        }
        let start = i;
        let key_end = string_end(text, i)?;
        let key = text.get(start + 1..key_end - 1)?;
        i = skip_blanks(text, key_end);
        if text.get(i) != Some(&b':') {
            return None;
        }
        i = skip_blanks(text, i + 1);
        let end = value_end(text, i)?;
        i = skip_blanks(text, end);
        let next = *text.get(i)?;
        let comma = (next == b',').then_some(i);
        if key == name {
            return Some(Member {
                start,
                end,
                comma_after: comma,
                comma_before,
            });
        }
        match next {
            b',' => comma_before = Some(i),
            _ => return None,
        }
        i += 1;
    }
}

fn skip_blanks(text: &[u8], mut i: usize) -> usize {
    while text
        .get(i)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        i += 1;
    }
    i
}

/// Just past the string whose opening quote is at `i`.
fn string_end(text: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        match *text.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

/// Just past the JSON value starting at `i` (strings and nesting followed; a scalar ends
/// at the first delimiter: the parse that checks the result judges it).
fn value_end(text: &[u8], i: usize) -> Option<usize> {
    match *text.get(i)? {
        b'"' => string_end(text, i),
        b'{' | b'[' => {
            let (mut depth, mut j) = (0usize, i);
            loop {
                match *text.get(j)? {
                    b'"' => {
                        j = string_end(text, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let len = text
                .get(i..)?
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))?;
            (len > 0).then_some(i + len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str, name: &str, key: &str, kind: IdKind) -> String {
        let mut cut_form = Vec::new();
        assert!(cut(text.as_bytes(), name, kind, &mut cut_form), "{text}");
        assert!(cut_form.len() < text.len() + name.len() + 3, "{text}");
        let mut back = Vec::new();
        restore(key.as_bytes(), &cut_form, &mut back).expect("restores");
        String::from_utf8(back).expect("UTF-8")
    }

    #[test]
    fn the_member_goes_back_where_it_was() {
        let t = IdKind::Text;
        assert_eq!(
            round_trip(r#"{"name":"a","r":"x"}"#, "name", "a", t),
            r#"{"name":"a","r":"x"}"#
        );
        assert_eq!(
            round_trip(r#"{"r":[1,{"name":2}],"name":"a","s":{}}"#, "name", "a", t),
            r#"{"r":[1,{"name":2}],"name":"a","s":{}}"#
        );
        assert_eq!(
            round_trip(r#"{"r":"x","name":"a"}"#, "name", "a", t),
            r#"{"r":"x","name":"a"}"#
        );
        assert_eq!(
            round_trip(r#"{"name":"a"}"#, "name", "a", t),
            r#"{"name":"a"}"#
        );
        assert_eq!(
            round_trip(r#"{ "r" : "}\"" , "id" : 42 }"#, "id", "B42", IdKind::Int),
            r#"{ "r" : "}\"" ,"id":42 }"#
        );
        assert_eq!(
            round_trip(
                r#"{"id":-7,"r":true}"#,
                "id",
                &crate::ids::int_key(-7),
                IdKind::Int
            ),
            r#"{"id":-7,"r":true}"#
        );
        assert_eq!(
            round_trip(r#"{"q":"a\"b","name":"\"x\""}"#, "name", "\"x\"", t),
            r#"{"q":"a\"b","name":"\"x\""}"#
        );
    }

    #[test]
    fn no_member_no_cut_and_broken_forms_are_errors() {
        let mut out = Vec::new();
        for text in [
            r#"{"r":"x"}"#,
            r#"{"n\u0061me":"a"}"#,
            "{}",
            "[1]",
            r#"{"r":{"name":1}}"#,
        ] {
            assert!(
                !cut(text.as_bytes(), "name", IdKind::Text, &mut out),
                "{text}"
            );
            assert!(out.is_empty());
        }
        assert!(cut(
            br#"{"name":"a","r":1}"#,
            "name",
            IdKind::Text,
            &mut out
        ));
        let mut back = Vec::new();
        for broken in [&out[..3], &out[..out.len() - 8]] {
            assert!(restore(b"a", broken, &mut back).is_err());
        }
        assert!(
            restore(b"\xff", &out, &mut back).is_err(),
            "a key not UTF-8"
        );
        // The id put back before the opening brace would make no object's text.
        let mut at_zero = out.clone();
        assert_eq!(at_zero[2], 1, "the id's place, after the brace");
        at_zero[2] = 0;
        assert!(restore(b"a", &at_zero, &mut back).is_err(), "the id at 0");
        let mut int = Vec::new();
        assert!(cut(br#"{"id":1,"r":1}"#, "id", IdKind::Int, &mut int));
        assert!(restore(b"x1", &int, &mut back).is_err(), "no integer key");
    }
}
