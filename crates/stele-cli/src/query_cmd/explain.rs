//! What `--explain` prints: the plan, the candidates, what was examined and the time, as
//! text for people or (`--json`) one JSON object.

use std::io::Write;

use anyhow::Result;
use serde_json::json;
use stele::{Access, Plan, QueryStats};

/// Whether the plan counted from index keys alone.
pub(super) fn covered(plan: &Plan) -> bool {
    matches!(plan.access, Access::Index { covered: true, .. })
}

/// Microseconds as people read them: `850 us`, `12.3 ms`, `4.56 s`.
fn duration(us: u64) -> String {
    match us {
        0..1_000 => format!("{us} us"),
        1_000..1_000_000 => format!("{:.1} ms", us as f64 / 1e3),
        _ => format!("{:.2} s", us as f64 / 1e6),
    }
}

/// Prints the explanation of a run; `count` is the answer of a `--count`.
pub(super) fn print(
    w: &mut impl Write,
    plan: &Plan,
    stats: &QueryStats,
    count: Option<u64>,
    as_json: bool,
) -> Result<()> {
    let candidates = plan.candidates();
    if as_json {
        let candidates: Vec<_> = candidates
            .iter()
            .map(|c| json!({"index": c.index, "chosen": c.chosen, "reason": c.reason}))
            .collect();
        let mut v = json!({
            "plan": plan.to_string(),
            "index": plan.index(),
            "full_scan": plan.is_full_scan(),
            "covered": covered(plan),
            "sorted_in_memory": plan.sorted_in_memory,
            "candidates": candidates,
            "keys_examined": stats.keys_examined,
            "docs_examined": stats.docs_examined,
            "rows": stats.rows,
            "elapsed_us": stats.elapsed_us,
        });
        if let (Some(n), Some(obj)) = (count, v.as_object_mut()) {
            obj.insert("count".to_owned(), n.into());
        }
        writeln!(w, "{v}")?;
        return Ok(());
    }
    writeln!(w, "plan: {plan}")?;
    if candidates.is_empty() {
        writeln!(
            w,
            "candidates: none (no index of this collection serves queries)"
        )?;
    } else {
        writeln!(w, "candidates:")?;
        let width = candidates.iter().map(|c| c.index.len()).max().unwrap_or(0);
        for c in &candidates {
            let verdict = if c.chosen { "chosen" } else { "rejected" };
            writeln!(w, "  {:<width$}  {verdict:<8}  {}", c.index, c.reason)?;
        }
    }
    writeln!(w, "keys examined: {}", stats.keys_examined)?;
    writeln!(w, "documents examined: {}", stats.docs_examined)?;
    match count {
        Some(n) => {
            writeln!(w, "count: {n}")?;
            if covered(plan) {
                writeln!(w, "covered: no document read")?;
            }
        }
        None => writeln!(w, "rows: {}", stats.rows)?,
    }
    writeln!(w, "time: {}", duration(stats.elapsed_us))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn durations_read_as_words() {
        assert_eq!(super::duration(850), "850 us");
        assert_eq!(super::duration(12_340), "12.3 ms");
        assert_eq!(super::duration(4_560_000), "4.56 s");
    }
}
