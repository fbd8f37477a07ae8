//! The clients: keep-alive HTTP connections on loopback asking for collection pages (50
//! documents, by cursor) and document pages, HTML and JSON, each answer checked.

use anyhow::Result;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A kind of request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ListHtml,
    DocHtml,
    ListJson,
    DocJson,
}

pub const KINDS: [Kind; 4] = [Kind::ListHtml, Kind::DocHtml, Kind::ListJson, Kind::DocJson];

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::ListHtml => "collection page (50 docs), HTML",
            Kind::DocHtml => "document page, HTML",
            Kind::ListJson => "collection page (50 docs), JSON",
            Kind::DocJson => "document page, JSON",
        }
    }
}

/// How one site is asked and checked: URLs for a cursor or an id, and the check of an
/// answer's body (`Err` with what is wrong).
pub trait Site: Sync {
    fn url(&self, kind: Kind, id: &str) -> String;
    fn check(&self, kind: Kind, id: &str, body: &str) -> Result<(), String>;
}

/// What the clients saw.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Latencies per kind, in microseconds.
    pub latencies: [Vec<u64>; 4],
    pub errors: u64,
    pub wrong: u64,
    pub first_problems: Vec<String>,
}

impl Outcome {
    fn merge(&mut self, other: Outcome) {
        for (a, b) in self.latencies.iter_mut().zip(other.latencies) {
            a.extend(b);
        }
        self.errors += other.errors;
        self.wrong += other.wrong;
        for p in other.first_problems {
            if self.first_problems.len() < 5 {
                self.first_problems.push(p);
            }
        }
    }
}

/// `q` quantile (0-1) of `v` (sorted here), in microseconds.
pub fn quantile(v: &mut [u64], q: f64) -> u64 {
    v.sort_unstable();
    if v.is_empty() {
        return 0;
    }
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v.get(i).copied().unwrap_or(0)
}

/// SplitMix64.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n.max(1)
    }
}

pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// GET `url`: status and body.
pub fn get(agent: &ureq::Agent, url: &str) -> Result<(u16, String)> {
    let mut resp = agent.get(url).call()?;
    let status = resp.status().as_u16();
    let body = resp
        .body_mut()
        .with_config()
        .limit(u64::MAX)
        .read_to_string()?;
    Ok((status, body))
}

/// `clients` threads asking `site` for `seconds`, each kind in turn, ids drawn from
/// `0..docs` by `id_of`.
pub fn run(
    site: &dyn Site,
    clients: usize,
    seconds: f64,
    docs: u64,
    id_of: fn(u64) -> String,
) -> Outcome {
    let stop = AtomicBool::new(false);
    let mut total = Outcome::default();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..clients)
            .map(|c| {
                let stop = &stop;
                scope.spawn(move || {
                    let agent = agent();
                    let mut rng = Rng(0x5e1e + c as u64);
                    let mut out = Outcome::default();
                    let mut n = c;
                    while !stop.load(Ordering::Relaxed) {
                        let k = n % 4;
                        let kind = KINDS[k];
                        n += 1;
                        let id = id_of(rng.below(docs));
                        let url = site.url(kind, &id);
                        let t = Instant::now();
                        let res = get(&agent, &url);
                        let us = t.elapsed().as_micros() as u64;
                        match res {
                            Ok((200, body)) => {
                                out.latencies[k].push(us);
                                if let Err(why) = site.check(kind, &id, &body) {
                                    out.wrong += 1;
                                    if out.first_problems.len() < 5 {
                                        out.first_problems.push(format!("{url}: {why}"));
                                    }
                                }
                            }
                            Ok((status, body)) => {
                                out.errors += 1;
                                if out.first_problems.len() < 5 {
                                    let head: String = body.chars().take(200).collect();
                                    out.first_problems.push(format!("{url}: {status} {head}"));
                                }
                            }
                            Err(e) => {
                                out.errors += 1;
                                if out.first_problems.len() < 5 {
                                    out.first_problems.push(format!("{url}: {e}"));
                                }
                            }
                        }
                    }
                    out
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
        for h in handles {
            match h.join() {
                Ok(o) => total.merge(o),
                Err(_) => total.errors += 1,
            }
        }
    });
    total
}

/// The ids linked as `marker ID"` in an HTML page, in order.
pub fn linked_ids(body: &str, marker: &str) -> Vec<String> {
    body.split(marker)
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect()
}

/// GET `url`, reading the body as it streams: status, bytes and lines.
pub fn get_counting(agent: &ureq::Agent, url: &str) -> Result<(u16, u64, u64)> {
    use std::io::Read;
    let mut resp = agent.get(url).call()?;
    let status = resp.status().as_u16();
    let mut reader = resp.body_mut().with_config().limit(u64::MAX).reader();
    let mut buf = vec![0u8; 1 << 16];
    let (mut bytes, mut lines) = (0u64, 0u64);
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
        lines += buf
            .get(..n)
            .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count()) as u64;
    }
    Ok((status, bytes, lines))
}
