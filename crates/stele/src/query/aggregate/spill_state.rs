//! The state of a group's accumulators, and that state as bytes for a `$group` that spills
//! through the sorter (`group.rs`): its key's JSON, then each accumulator's state, tagged.
//! Lengths and numbers are little-endian and fixed-width; the bytes live only in the
//! sorter's temporary files, within one run of one query.

use crate::error::{Error, Result};

/// The state of one accumulator in one group.
#[derive(Debug, Clone)]
pub(super) enum State {
    Sum { int: i128, float: f64, floats: bool },
    Avg { sum: f64, n: u64 },
    Extreme(Option<(Vec<u8>, String)>),
    Count(u64),
    Value(Option<String>),
    Push(Vec<String>),
}

/// A group's key as JSON, and its accumulators' states.
pub(super) type GroupState = (String, Vec<State>);

fn put_str(s: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s);
}

/// Writes a group's state (its key's JSON `key`, its `states`) into `out`.
pub(super) fn encode(key: &str, states: &[State], out: &mut Vec<u8>) {
    out.clear();
    put_str(key.as_bytes(), out);
    for s in states {
        match s {
            State::Sum { int, float, floats } => {
                out.push(0);
                out.extend_from_slice(&int.to_le_bytes());
                out.extend_from_slice(&float.to_le_bytes());
                out.push(u8::from(*floats));
            }
            State::Avg { sum, n } => {
                out.push(1);
                out.extend_from_slice(&sum.to_le_bytes());
                out.extend_from_slice(&n.to_le_bytes());
            }
            State::Extreme(None) => out.push(2),
            State::Extreme(Some((enc, json))) => {
                out.push(3);
                put_str(enc, out);
                put_str(json.as_bytes(), out);
            }
            State::Count(n) => {
                out.push(4);
                out.extend_from_slice(&n.to_le_bytes());
            }
            State::Value(None) => out.push(5),
            State::Value(Some(json)) => {
                out.push(6);
                put_str(json.as_bytes(), out);
            }
            State::Push(list) => {
                out.push(7);
                out.extend_from_slice(&(list.len() as u64).to_le_bytes());
                for json in list {
                    put_str(json.as_bytes(), out);
                }
            }
        }
    }
}

/// Reads what [`encode`] wrote.
struct Reader<'a>(&'a [u8]);

fn damaged() -> Error {
    Error::InvalidQuery {
        reason: "a group spilled to a temporary file came back damaged (is the temp folder's disk failing?)"
            .to_owned(),
    }
}

impl<'a> Reader<'a> {
    fn bytes<const N: usize>(&mut self) -> Result<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>().ok_or_else(damaged)?;
        self.0 = rest;
        Ok(*head)
    }

    fn slice(&mut self) -> Result<&'a [u8]> {
        let len = u32::from_le_bytes(self.bytes()?) as usize;
        let (s, rest) = self.0.split_at_checked(len).ok_or_else(damaged)?;
        self.0 = rest;
        Ok(s)
    }

    fn string(&mut self) -> Result<String> {
        String::from_utf8(self.slice()?.to_vec()).map_err(|_| damaged())
    }

    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.bytes()?))
    }

    fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.bytes()?))
    }
}

/// Decodes a state of `accs` accumulators.
pub(super) fn decode(bytes: &[u8], accs: usize) -> Result<GroupState> {
    let mut r = Reader(bytes);
    let key = r.string()?;
    let mut states = Vec::with_capacity(accs);
    for _ in 0..accs {
        let [tag] = r.bytes::<1>()?;
        states.push(match tag {
            0 => State::Sum {
                int: i128::from_le_bytes(r.bytes()?),
                float: r.f64()?,
                floats: r.bytes::<1>()? != [0],
            },
            1 => State::Avg {
                sum: r.f64()?,
                n: r.u64()?,
            },
            2 => State::Extreme(None),
            3 => State::Extreme(Some((r.slice()?.to_vec(), r.string()?))),
            4 => State::Count(r.u64()?),
            5 => State::Value(None),
            6 => State::Value(Some(r.string()?)),
            7 => {
                let n = r.u64()?;
                // Each element takes at least its 4-byte length: a damaged count cannot
                // reserve more than the bytes left could hold.
                let mut list = Vec::with_capacity((n as usize).min(r.0.len() / 4));
                for _ in 0..n {
                    list.push(r.string()?);
                }
                State::Push(list)
            }
            _ => return Err(damaged()),
        });
    }
    if !r.0.is_empty() {
        return Err(damaged());
    }
    Ok((key, states))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_round_trips_and_damage_is_an_error() {
        let state: GroupState = (
            r#""k""#.to_owned(),
            vec![
                State::Sum {
                    int: -(1 << 70),
                    float: 2.5,
                    floats: true,
                },
                State::Avg { sum: 3.0, n: 2 },
                State::Extreme(None),
                State::Extreme(Some((vec![1, 2], "7".to_owned()))),
                State::Count(9),
                State::Value(None),
                State::Value(Some("null".to_owned())),
                State::Push(vec!["1".to_owned(), "[]".to_owned()]),
            ],
        );
        let mut bytes = Vec::new();
        encode(&state.0, &state.1, &mut bytes);
        let back = decode(&bytes, 8).unwrap();
        let mut again = Vec::new();
        encode(&back.0, &back.1, &mut again);
        assert_eq!(again, bytes);
        assert_eq!(back.0, state.0);
        for cut in 0..bytes.len() {
            assert!(decode(bytes.get(..cut).unwrap(), 8).is_err(), "{cut}");
        }
        assert!(decode(&bytes, 7).is_err());
    }
}
