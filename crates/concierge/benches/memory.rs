//! What recalling a person's memories costs when a run starts: 10,000
//! memories for the person (and 40,000 of other people in the same store),
//! ranked against a message with SQLite FTS5. Two sets of memories: few
//! subjects said many ways (each word of the message is in 5–9% of the
//! person's memories: the hard case, ~1,800 memories to rank), and words
//! drawn from a 5,000-word vocabulary with Zipf's law (as text is).
//! `cargo bench -p concierge --bench memory`

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use concierge::memory::{MemoryOrigin, MemoryOwner, MemoryStore};
use divan::Bencher;

fn main() {
    // `MEMORY_CPU=1 cargo bench -p concierge --bench memory`: the process's
    // CPU per recall (both sets) instead of divan's wall-clock timings.
    if std::env::var_os("MEMORY_CPU").is_some() {
        for (name, fact) in [("few subjects", fact as fn(usize) -> String), ("zipf", zipf_fact)] {
            let (_dir, store, ana) = store_of(fact);
            let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
            let n = 2_000;
            let before = cpu_seconds();
            for i in 0..n {
                let message = if name == "zipf" {
                    zipf_fact(1_000_000 + i)
                } else {
                    MESSAGES[i % MESSAGES.len()].to_string()
                };
                runtime.block_on(store.recall(&ana, &message, 5)).unwrap();
            }
            let per = (cpu_seconds() - before) / n as f64 * 1000.0;
            println!("recall 5 of 10,000 ({name}): {per:.3} ms of CPU each");
        }
        return;
    }
    divan::main();
}

/// The process's CPU time so far (user and system), from /proc/self/stat.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap().split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

const MESSAGES: [&str; 3] = [
    "Book me a flight to Lisbon next week, an aisle seat please",
    "Order lunch for the Berlin team, something vegetarian",
    "Remind me about the dentist on Friday",
];

const SUBJECTS: &[&str] = &[
    "aisle seats",
    "window seats",
    "vegetarian food",
    "peanuts",
    "her manager Sarah",
    "the Lisbon office",
    "early flights",
    "hotel gyms",
    "quiet rooms",
    "train travel",
    "the quarterly report",
    "Friday deployments",
    "dark roast coffee",
    "the dentist",
    "her sister Maya",
    "the gym on Elm Street",
    "budget airlines",
    "business class",
    "the Berlin team",
    "Spanish lessons",
    "marathon training",
    "the car lease",
];
const VERBS: &[&str] = &[
    "likes",
    "avoids",
    "asked about",
    "mentioned",
    "prefers",
    "dislikes",
    "is planning",
    "forgot",
];
const WHEN: &[&str] = &[
    "in spring",
    "on Mondays",
    "every month",
    "last year",
    "before meetings",
    "on long trips",
];

fn fact(i: usize) -> String {
    format!(
        "{} {} {} (note {i})",
        VERBS[i % VERBS.len()],
        SUBJECTS[(i / VERBS.len()) % SUBJECTS.len()],
        WHEN[(i / 7) % WHEN.len()]
    )
}

/// The `n`-th of 6 words drawn from a 5,000-word vocabulary by Zipf's law
/// (a fixed linear congruential sequence, so every run has the same data).
fn zipf_fact(i: usize) -> String {
    let mut state = (i as u64)
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    let mut words = Vec::new();
    for _ in 0..6 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let u = ((state >> 11) as f64 / (1u64 << 53) as f64).max(1e-12);
        // Inverse of the harmonic CDF, approximately: rank = N^u.
        let rank = (5_000f64.powf(u)) as usize;
        words.push(format!("w{rank}"));
    }
    words.join(" ")
}

fn store() -> (tempfile::TempDir, MemoryStore, MemoryOwner) {
    store_of(fact)
}

fn store_of(fact: fn(usize) -> String) -> (tempfile::TempDir, MemoryStore, MemoryOwner) {
    let dir = tempfile::tempdir().unwrap();
    let store = MemoryStore::open(&dir.path().join("memory.db")).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let ana = MemoryOwner::new("acme", "ana");
    runtime.block_on(async {
        for person in 0..5 {
            let owner = if person == 0 {
                ana.clone()
            } else {
                MemoryOwner::new("acme", format!("p{person}"))
            };
            for i in 0..10_000 {
                store
                    .remember(&owner, &fact(i + person), MemoryOrigin::default())
                    .await
                    .unwrap();
            }
        }
    });
    (dir, store, ana)
}

/// One recall of 5 memories for a message, as a run's start makes it.
#[divan::bench(sample_count = 200)]
fn recall_5_of_10000(bencher: Bencher) {
    let (_dir, store, ana) = store();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let mut n = 0;
    bencher.bench_local(|| {
        n += 1;
        runtime
            .block_on(store.recall(&ana, MESSAGES[n % MESSAGES.len()], 5))
            .unwrap()
    });
}

/// The same with memories whose words follow Zipf's law.
#[divan::bench(sample_count = 200)]
fn recall_5_of_10000_zipf(bencher: Bencher) {
    let (_dir, store, ana) = store_of(zipf_fact);
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let mut n = 0;
    bencher.bench_local(|| {
        n += 1;
        // A message of seven words drawn as the memories' are.
        let message = zipf_fact(1_000_000 + n);
        runtime.block_on(store.recall(&ana, &message, 5)).unwrap()
    });
}
