//! Dates as people write them: the facade's parser (see [`concierge::dates`]).

pub use concierge::dates::*;
