//! Options for one engine, carried from a run's
//! [`RunOptions`](crate::RunOptions) to the engine that starts the run.

use std::any::{Any, TypeId};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A value an engine may read ([`EngineOptions::get`]). Implemented for
/// every `Any + Send + Sync + Clone + PartialEq + Debug` type.
trait EngineOption: Any + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn same_as(&self, other: &dyn EngineOption) -> bool;
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

impl<T: Any + Send + Sync + PartialEq + fmt::Debug> EngineOption for T {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn same_as(&self, other: &dyn EngineOption) -> bool {
        other.as_any().downcast_ref::<T>() == Some(self)
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Options only one engine understands, one value per type (like
/// `http::Extensions`): the Temporal engine reads its workflow options from
/// here, and every other engine ignores them. Set through
/// [`RunOptions::engine_option`](crate::RunOptions::engine_option); an
/// engine reads them from the run's [`RunSetup`](super::RunSetup).
#[derive(Clone, Default)]
pub struct EngineOptions {
    values: BTreeMap<TypeId, Arc<dyn EngineOption>>,
}

impl EngineOptions {
    /// No options.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the option of `value`'s type (replacing one set before).
    pub fn insert<T: Any + Send + Sync + Clone + PartialEq + fmt::Debug>(&mut self, value: T) {
        self.values.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The option of type `T`, if one was set.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.values
            .get(&TypeId::of::<T>())
            .and_then(|value| value.as_ref().as_any().downcast_ref::<T>())
    }

    /// Whether no option is set.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl PartialEq for EngineOptions {
    fn eq(&self, other: &Self) -> bool {
        self.values.len() == other.values.len()
            && self
                .values
                .iter()
                .all(|(id, value)| other.values.get(id).is_some_and(|o| value.same_as(o.as_ref())))
    }
}

impl fmt::Debug for EngineOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Value<'a>(&'a dyn EngineOption);
        impl fmt::Debug for Value<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.describe(f)
            }
        }
        f.debug_list()
            .entries(self.values.values().map(|v| Value(v.as_ref())))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct Queue(String);

    #[test]
    fn one_value_per_type_read_back_by_its_type() {
        let mut options = EngineOptions::new();
        assert!(options.is_empty());
        assert_eq!(options.get::<Queue>(), None);
        options.insert(Queue("a".into()));
        options.insert(Queue("b".into()));
        options.insert(7_u32);
        assert_eq!(options.get::<Queue>(), Some(&Queue("b".into())));
        assert_eq!(options.get::<u32>(), Some(&7));
        assert_eq!(options.get::<u64>(), None);

        let mut same = EngineOptions::new();
        same.insert(7_u32);
        assert_ne!(options, same);
        same.insert(Queue("b".into()));
        assert_eq!(options, same);
        assert!(format!("{options:?}").contains("Queue(\"b\")"));
    }
}
