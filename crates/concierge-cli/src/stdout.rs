//! Writing to standard output the way Unix tools do: when the reader has
//! gone (`concierge sessions | head -1`, a benchmark piped into a reader
//! that stopped), the program ends quietly instead of panicking, as Rust's
//! `println!` does on a closed pipe. The crate's `println!` and `print!`
//! (defined in `main.rs`) write through here.

use std::io::{ErrorKind, Write};

/// Writes `text` to standard output (flushed, so a prompt shows at once).
pub fn write(text: std::fmt::Arguments<'_>, newline: bool) {
    let mut out = std::io::stdout().lock();
    let written = match newline {
        true => writeln!(out, "{text}"),
        false => write!(out, "{text}"),
    }
    .and_then(|()| out.flush());
    match written {
        Ok(()) => {}
        // The reader stopped reading: nothing more is wanted.
        Err(error) if error.kind() == ErrorKind::BrokenPipe => std::process::exit(0),
        Err(error) => {
            eprintln!("error: cannot write the output: {error}");
            std::process::exit(1);
        }
    }
}
