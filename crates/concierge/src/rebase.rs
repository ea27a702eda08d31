//! Paths named in a configuration file are read from the file's directory.

use std::path::{Path, PathBuf};

/// `path` as named in a file in `base`: relative paths are relative to the file.
pub(crate) fn rebase(base: &Path, path: PathBuf) -> PathBuf {
    if path.is_absolute() || base.as_os_str().is_empty() {
        path
    } else {
        base.join(path)
    }
}
