//! Reading inputs and writing outputs: a path, or `-` for standard input/output.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// All bytes of `path`, or of standard input for `-`.
pub fn read_input(path: &Path) -> Result<Vec<u8>> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .context("reading standard input")?;
        Ok(buf)
    } else {
        std::fs::read(path).with_context(|| format!("reading {}", path.display()))
    }
}

/// Writes `bytes` to `path` (atomically: a temporary file renamed into place), or to standard
/// output for `-` or no path.
pub fn write_output(path: Option<&Path>, bytes: &[u8]) -> Result<()> {
    match path {
        None => write_stdout(bytes),
        Some(p) if p.as_os_str() == "-" => write_stdout(bytes),
        Some(p) => {
            let tmp = temp_beside(p);
            std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
            std::fs::rename(&tmp, p).with_context(|| {
                let _ = std::fs::remove_file(&tmp);
                format!("renaming {} to {}", tmp.display(), p.display())
            })
        }
    }
}

/// A temporary name in the folder of `path`, for writing a file that is then renamed into
/// place (same file system, so the rename is atomic).
pub fn temp_beside(path: &Path) -> PathBuf {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dir.join(format!(".{name}.tmp-{}", std::process::id()))
}

fn write_stdout(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        // A closed pipe (`stele ... | head`) is not an error worth reporting.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing standard output"),
    }
}
