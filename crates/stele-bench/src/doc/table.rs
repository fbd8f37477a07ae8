//! Markdown tables and number formatting.

/// A markdown table printed with aligned columns.
#[derive(Debug)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|s| (*s).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn print(&self) {
        let n = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for r in &self.rows {
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut s = String::from("|");
            for (i, w) in widths.iter().enumerate() {
                let c = cells.get(i).map_or("", String::as_str);
                let pad = w.saturating_sub(c.chars().count());
                if i == 0 {
                    s.push_str(&format!(" {c}{} |", " ".repeat(pad)));
                } else {
                    s.push_str(&format!(" {}{c} |", " ".repeat(pad)));
                }
            }
            s
        };
        println!("{}", line(&self.header));
        let mut sep = String::from("|");
        for (i, w) in widths.iter().enumerate().take(n) {
            if i == 0 {
                sep.push_str(&format!("{}|", "-".repeat(w + 2)));
            } else {
                sep.push_str(&format!("{}:|", "-".repeat(w + 1)));
            }
        }
        println!("{sep}");
        for r in &self.rows {
            println!("{}", line(r));
        }
        println!();
    }
}

/// `x` with `d` decimals, or "-" when not finite.
pub fn f(x: f64, d: usize) -> String {
    if x.is_finite() {
        format!("{x:.d$}")
    } else {
        "-".to_owned()
    }
}

/// A ratio as "1.23x" (2 significant decimals under 10, 1 under 100, none above).
pub fn ratio(x: f64) -> String {
    if !x.is_finite() {
        return "-".to_owned();
    }
    if x < 10.0 {
        format!("{x:.2}x")
    } else if x < 100.0 {
        format!("{x:.1}x")
    } else {
        format!("{x:.0}x")
    }
}

/// Megabytes (10^6) per second for `bytes` processed in `secs`.
pub fn mbps(bytes: usize, secs: f64) -> f64 {
    bytes as f64 / secs / 1e6
}

/// Geometric mean of the finite, positive values.
pub fn geomean(xs: &[f64]) -> f64 {
    let v: Vec<f64> = xs
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    if v.is_empty() {
        return f64::NAN;
    }
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// Bytes with thousands separators.
pub fn bytes(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
