//! Stele's tables (`stele-table`). Placeholder until the crate lands.

use std::path::Path;

use anyhow::{Result, bail};

use crate::data::SetInfo;
use crate::stores::{Built, Input, Reader};

pub const AVAILABLE: bool = false;

pub fn build(_store: &str, _set: &SetInfo, _input: Input, _dir: &Path) -> Result<Built> {
    bail!("stele-table is not available in this build")
}

pub fn open(_path: &Path, _cold: bool) -> Result<Box<dyn Reader>> {
    bail!("stele-table is not available in this build")
}
