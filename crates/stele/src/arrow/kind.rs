//! Column kinds: what an Arrow column holds, read from a given schema or inferred from a
//! sample of documents by the rule in the module's documentation.

use crate::error::{Error, Result};
use arrow_schema::{DataType, Field, Fields};
use std::collections::HashMap;
use std::sync::Arc;
use stele_doc::Value;

/// The metadata key and value that mark a Utf8 column as JSON text (Arrow's canonical
/// extension type `arrow.json`, which pyarrow, DuckDB and Polars know).
pub(crate) const EXTENSION_KEY: &str = "ARROW:extension:name";
/// See [`EXTENSION_KEY`].
pub(crate) const JSON_EXTENSION: &str = "arrow.json";

/// Objects with more distinct keys than this over the sample (maps keyed by data, such as
/// `{"user123": ..}`) become JSON text instead of a struct with a column per key.
pub(crate) const MAX_STRUCT_FIELDS: usize = 1000;

/// What a column holds, and so how values are appended to it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    /// Nulls only (a given schema's `Null` type).
    Null,
    Bool,
    Int64,
    Float64,
    /// Strings only.
    Utf8,
    /// Any value, as its JSON text (strings quoted).
    Json,
    /// Objects: the named children, in order.
    Struct(Vec<(String, Kind)>),
    /// Arrays of one kind of element.
    List(Box<Kind>),
}

impl Kind {
    /// The kind of a given field; `at` names it in errors.
    pub(crate) fn of_field(field: &Field, at: &str) -> Result<Kind> {
        let json = field
            .metadata()
            .get(EXTENSION_KEY)
            .is_some_and(|v| v == JSON_EXTENSION);
        Ok(match field.data_type() {
            DataType::Null => Kind::Null,
            DataType::Boolean => Kind::Bool,
            DataType::Int64 => Kind::Int64,
            DataType::Float64 => Kind::Float64,
            DataType::Utf8 if json => Kind::Json,
            DataType::Utf8 => Kind::Utf8,
            DataType::Struct(children) if children.is_empty() => {
                return Err(Error::ArrowSchema {
                    field: at.to_owned(),
                    reason: "a struct needs at least one field (read empty objects as JSON text: Utf8 with the arrow.json extension)".to_owned(),
                });
            }
            DataType::Struct(children) => Kind::Struct(
                children
                    .iter()
                    .map(|c| {
                        let path = format!("{at}.{}", c.name());
                        Ok((c.name().clone(), Kind::of_field(c, &path)?))
                    })
                    .collect::<Result<_>>()?,
            ),
            DataType::List(item) => Kind::List(Box::new(Kind::of_field(item, &format!("{at}[]"))?)),
            other => {
                return Err(Error::ArrowSchema {
                    field: at.to_owned(),
                    reason: format!(
                        "type {other} is not read from documents; use Boolean, Int64, Float64, Utf8 (with the arrow.json extension for JSON text), Struct, List or Null, and cast afterwards"
                    ),
                });
            }
        })
    }

    /// The Arrow field of this kind named `name` (nullable: any document may lack it).
    pub(crate) fn field(&self, name: &str) -> Field {
        let field = Field::new(name, self.data_type(), true);
        if *self == Kind::Json {
            let meta = HashMap::from([(EXTENSION_KEY.to_owned(), JSON_EXTENSION.to_owned())]);
            field.with_metadata(meta)
        } else {
            field
        }
    }

    pub(crate) fn data_type(&self) -> DataType {
        match self {
            Kind::Null => DataType::Null,
            Kind::Bool => DataType::Boolean,
            Kind::Int64 => DataType::Int64,
            Kind::Float64 => DataType::Float64,
            Kind::Utf8 | Kind::Json => DataType::Utf8,
            Kind::Struct(children) => DataType::Struct(Fields::from(
                children
                    .iter()
                    .map(|(name, k)| Arc::new(k.field(name)))
                    .collect::<Vec<_>>(),
            )),
            Kind::List(item) => DataType::List(Arc::new(item.field("item"))),
        }
    }
}

/// What the sample showed at one place of the documents: merged value by value, then
/// turned into a [`Kind`].
#[derive(Debug, Clone, Default)]
pub(crate) enum Seen {
    /// Nothing but nulls, or nothing at all.
    #[default]
    Nothing,
    Bool,
    Int,
    Float,
    Str,
    /// Mixed types, integers beyond 64 bits, numbers kept as exact text.
    Json,
    Object(SeenObject),
    Array(Box<Seen>),
}

/// The keys seen in objects at one place, in the order first seen; and the key each place
/// of the last object merged held (objects of one shape: a comparison instead of a hash).
#[derive(Debug, Clone, Default)]
pub(crate) struct SeenObject {
    keys: Vec<(String, Seen)>,
    at: HashMap<String, usize>,
    guess: PlaceGuess,
}

/// For objects of one shape, which put each key at the place the object before did: the
/// slot (a column, a key's index) that the key at each place went to last time. Tried
/// first with one comparison of names; the caller hashes only when it misses.
#[derive(Debug, Clone, Default)]
pub(crate) struct PlaceGuess(Vec<usize>);

impl PlaceGuess {
    /// The slot the key at `place` went to last time, if `holds(slot)` says it is this
    /// key's.
    pub(crate) fn get(&self, place: usize, holds: impl Fn(usize) -> bool) -> Option<usize> {
        self.0.get(place).copied().filter(|&slot| holds(slot))
    }

    /// Remembers that the key at `place` went to `slot` (places are met in order, so an
    /// unseen place is the next one).
    pub(crate) fn record(&mut self, place: usize, slot: usize) {
        if let Some(g) = self.0.get_mut(place) {
            *g = slot;
        } else if self.0.len() == place {
            self.0.push(slot);
        }
    }
}

impl SeenObject {
    /// Merges the properties of one object; false once it has too many keys to be a struct.
    pub(crate) fn merge(&mut self, o: &stele_doc::Object<'_>) -> bool {
        for (place, (key, v)) in o.iter_original().enumerate() {
            let keys = &self.keys;
            let guessed = self
                .guess
                .get(place, |i| keys.get(i).is_some_and(|(k, _)| k == key));
            let i = match guessed.or_else(|| self.at.get(key).copied()) {
                Some(i) => i,
                None => {
                    if self.keys.len() >= MAX_STRUCT_FIELDS {
                        return false;
                    }
                    self.keys.push((key.to_owned(), Seen::Nothing));
                    self.at.insert(key.to_owned(), self.keys.len() - 1);
                    self.keys.len() - 1
                }
            };
            if guessed.is_none() {
                self.guess.record(place, i);
            }
            if let Some((_, seen)) = self.keys.get_mut(i) {
                seen.merge(v);
            }
        }
        true
    }

    /// Joins what `other` saw (read after this, in id order) into this: keys it saw first
    /// go after these, as a pass over both in order would have put them; false once there
    /// are too many keys to be a struct.
    pub(crate) fn join(&mut self, other: SeenObject) -> bool {
        for (key, seen) in other.keys {
            match self.at.get(&key) {
                Some(&i) => {
                    if let Some((_, mine)) = self.keys.get_mut(i) {
                        let before = std::mem::take(mine);
                        *mine = before.join(seen);
                    }
                }
                None => {
                    if self.keys.len() >= MAX_STRUCT_FIELDS {
                        return false;
                    }
                    self.at.insert(key.clone(), self.keys.len());
                    self.keys.push((key, seen));
                }
            }
        }
        true
    }

    /// The keys and what was seen under each, in the order first seen.
    pub(crate) fn into_keys(self) -> Vec<(String, Seen)> {
        self.keys
    }
}

impl Seen {
    /// Adds one value to what was seen here.
    pub(crate) fn merge(&mut self, v: Value<'_>) {
        let next = match (std::mem::take(self), v) {
            (seen, Value::Null) => seen,
            (Seen::Json, _) => Seen::Json,
            (Seen::Nothing | Seen::Bool, Value::Bool(_)) => Seen::Bool,
            (Seen::Nothing | Seen::Int, Value::Int(_)) => Seen::Int,
            (Seen::Float, Value::Int(_)) => Seen::Float,
            (Seen::Nothing | Seen::Int | Seen::Float, Value::Float(_) | Value::Scaled(_)) => {
                Seen::Float
            }
            (Seen::Nothing | Seen::Int | Seen::Float, Value::Decimal(text))
                if decimal_is_float(text) =>
            {
                Seen::Float
            }
            (Seen::Nothing | Seen::Str, Value::String(_)) => Seen::Str,
            (Seen::Nothing, Value::Object(o)) => {
                let mut obj = SeenObject::default();
                if obj.merge(&o) {
                    Seen::Object(obj)
                } else {
                    Seen::Json
                }
            }
            (Seen::Object(mut obj), Value::Object(o)) => {
                if obj.merge(&o) {
                    Seen::Object(obj)
                } else {
                    Seen::Json
                }
            }
            (Seen::Nothing, Value::Array(a)) => {
                let mut item = Seen::Nothing;
                a.iter().for_each(|e| item.merge(e));
                Seen::Array(Box::new(item))
            }
            (Seen::Array(mut item), Value::Array(a)) => {
                a.iter().for_each(|e| item.merge(e));
                Seen::Array(item)
            }
            // Integers beyond i64, numbers whose exact text is kept, mixed types.
            _ => Seen::Json,
        };
        *self = next;
    }

    /// What was seen here and, after it, `other`: the kind one pass over both would have
    /// seen (inference on several threads, a stretch of the collection each).
    pub(crate) fn join(self, other: Seen) -> Seen {
        match (self, other) {
            (seen, Seen::Nothing) | (Seen::Nothing, seen) => seen,
            (Seen::Bool, Seen::Bool) => Seen::Bool,
            (Seen::Int, Seen::Int) => Seen::Int,
            (Seen::Int | Seen::Float, Seen::Int | Seen::Float) => Seen::Float,
            (Seen::Str, Seen::Str) => Seen::Str,
            (Seen::Object(mut a), Seen::Object(b)) => {
                if a.join(b) {
                    Seen::Object(a)
                } else {
                    Seen::Json
                }
            }
            (Seen::Array(a), Seen::Array(b)) => Seen::Array(Box::new((*a).join(*b))),
            _ => Seen::Json,
        }
    }

    /// The column kind for what was seen: places with nothing but nulls, and objects that
    /// were always empty, become JSON text, which any later value fits.
    pub(crate) fn kind(self) -> Kind {
        match self {
            Seen::Nothing | Seen::Json => Kind::Json,
            Seen::Bool => Kind::Bool,
            Seen::Int => Kind::Int64,
            Seen::Float => Kind::Float64,
            Seen::Str => Kind::Utf8,
            Seen::Object(obj) if obj.keys.is_empty() => Kind::Json,
            Seen::Object(obj) => Kind::Struct(
                obj.into_keys()
                    .into_iter()
                    .map(|(k, s)| (k, s.kind()))
                    .collect(),
            ),
            Seen::Array(item) => Kind::List(Box::new(item.kind())),
        }
    }
}

/// Whether a number kept as exact text reads as a float: it has a fraction or an exponent
/// and is within the float range. Integers too long for 64 bits (and `-0`) are exact
/// integers a float would change, and `1e400` is none, so they stay JSON text.
pub(crate) fn decimal_is_float(text: &str) -> bool {
    text.bytes().any(|b| matches!(b, b'.' | b'e' | b'E'))
        && text.parse::<f64>().is_ok_and(f64::is_finite)
}
