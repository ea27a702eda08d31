//! A domain's store: a [`DomainDb`] that knows which domain it holds, so
//! each domain adds its own reads and changes to its `Store<...>`
//! (`impl Store<Finance> { ... }`) and shares how it is opened, dated and
//! changed.

use std::fmt;
use std::marker::PhantomData;
use std::path::PathBuf;

use chrono::NaiveDateTime;

use super::{DbSpec, DomainDb};

/// A domain whose data is a [`DomainDb`]: what its database is.
pub trait Domain {
    /// Its database.
    const DB: DbSpec;
}

/// The store of domain `D`: its database, with the domain's reads and
/// changes as methods (`FinanceStore` is `Store<Finance>`).
pub struct Store<D> {
    db: DomainDb,
    domain: PhantomData<fn() -> D>,
}

impl<D: Domain> Store<D> {
    /// The database at `path` (created and seeded on first use).
    pub fn open(path: impl Into<PathBuf>) -> Self {
        Self::over(DomainDb::open(D::DB, path))
    }

    /// The database the domain's environment variable names, else its
    /// default file in the working directory (see [`DbSpec`]).
    pub fn from_env() -> Self {
        Self::over(DomainDb::from_env(D::DB))
    }

    /// Fixes the clock at `now` (tests, demos; see [`DomainDb::at`]).
    pub fn at(self, now: NaiveDateTime) -> Self {
        Self::over(self.db.at(now))
    }
}

impl<D> Store<D> {
    fn over(db: DomainDb) -> Self {
        Self {
            db,
            domain: PhantomData,
        }
    }

    /// The file: its path, its clock and its changes applied once.
    pub fn db(&self) -> &DomainDb {
        &self.db
    }
}

impl<D> Clone for Store<D> {
    fn clone(&self) -> Self {
        Self::over(self.db.clone())
    }
}

impl<D> fmt::Debug for Store<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").field("db", &self.db).finish()
    }
}
