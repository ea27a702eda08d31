//! What the demos' database-backed tools share: one way to declare a tool
//! over its domain's store ([`db_tool!`]), descriptions from doc comments,
//! blocking SQLite work off the async threads, argument errors, annotations
//! and answers.

use concierge::ToolError;
use serde_json::Value;

use crate::domain_db::{Applied, StoreError};

/// Joins doc-comment lines the way `#[tool]` does: lines of a paragraph with
/// spaces, paragraphs with a blank line.
pub(crate) fn description(lines: &[&str]) -> String {
    let mut text = String::new();
    for line in lines.iter().map(|l| l.trim()) {
        if line.is_empty() {
            if !text.is_empty() && !text.ends_with("\n\n") {
                text.push_str("\n\n");
            }
        } else {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push(' ');
            }
            text.push_str(line);
        }
    }
    text.trim().to_string()
}

/// Runs blocking SQLite work off the async threads; `database` names the
/// database in the error if the work stops ("task").
pub(crate) async fn blocking<F>(database: &'static str, work: F) -> Result<Value, ToolError>
where
    F: FnOnce() -> Result<Value, ToolError> + Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::failed(format!("the {database} database work stopped unexpectedly: {e}")))?
}

/// What a tool's work comes to, as the tool's answer: a result, or (the
/// CRM's) a choice to put to the person first.
pub(crate) trait Answer {
    /// The tool's answer.
    fn into_answer(self) -> Result<Value, ToolError>;
}

impl Answer for Value {
    fn into_answer(self) -> Result<Value, ToolError> {
        Ok(self)
    }
}

/// A sentence's start: the first letter capitalized, a final full stop or
/// exclamation mark dropped ("fix the login bug." → "Fix the login bug").
pub(crate) fn sentence_case(text: &str) -> String {
    let text = text.trim().trim_end_matches(['.', '!']).trim();
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A count and its noun: "1 hint", "3 hints".
pub(crate) fn plural<N: std::fmt::Display + PartialEq + From<u8>>(n: N, one: &str, many: &str) -> String {
    let noun = if n == N::from(1) { one } else { many };
    format!("{n} {noun}")
}

/// An argument the tool cannot use, with what is wrong in a sentence.
pub(crate) fn invalid(field: &str, problem: impl Into<String>) -> ToolError {
    let problem = problem.into();
    ToolError::invalid_arguments(
        problem.clone(),
        vec![concierge::core::FieldError {
            field: field.to_string(),
            problem,
        }],
    )
}

/// Annotations of a tool that only reads (and so may be called again freely).
pub(crate) fn read_only() -> concierge::ToolAnnotations {
    concierge::ToolAnnotations {
        read_only: true,
        idempotent: true,
        ..concierge::ToolAnnotations::default()
    }
}

/// Declares a tool struct holding its domain's store, its spec (the doc
/// comment is the description, with the category, annotations, the
/// confirmation question and, optionally, the blackboard keys it provides)
/// and its call: the body runs on a blocking thread with the store, the
/// arguments and the context, and gives a `serde_json::Value` or, after
/// `-> Type`, another [`Answer`].
macro_rules! db_tool {
    (@answer) => { serde_json::Value };
    (@answer $answer:ty) => { $answer };
    (
        $(#[doc = $doc:literal])*
        $ty:ident, $name:literal, $store_ty:ty, $category:literal, $args:ty, $annotations:expr, $confirm:expr
        $(, provides [$($key:literal),*])?,
        |$store:ident, $a:ident, $cx:ident| $(-> $answer:ty)? $body:block
    ) => {
        $(#[doc = $doc])*
        #[derive(Clone, Debug)]
        pub struct $ty {
            store: std::sync::Arc<$store_ty>,
        }

        impl $ty {
            /// The tool's name, as planners and models call it.
            pub const NAME: &'static str = $name;

            /// The tool over `store`.
            pub fn new(store: std::sync::Arc<$store_ty>) -> Self {
                Self { store }
            }

            /// The call's work, on a blocking thread.
            #[allow(unused_variables)]
            fn run(
                $store: &$store_ty,
                $a: $args,
                $cx: concierge::ToolContext,
            ) -> Result<crate::toolkit::db_tool!(@answer $($answer)?), concierge::ToolError> $body
        }

        impl concierge::Tool for $ty {
            type Args = $args;

            fn spec(&self) -> concierge::ToolSpec {
                let spec = concierge::ToolSpec::new(
                    $name,
                    crate::toolkit::description(&[$($doc),*]),
                    concierge::tool::schema_for::<$args>(),
                )
                .category($category)
                .annotations($annotations)
                $($(.provides($key))*)?;
                let confirm: Option<&str> = $confirm;
                match confirm {
                    Some(template) => spec.confirm(template),
                    None => spec,
                }
            }

            fn call(
                &self,
                args: Self::Args,
                cx: concierge::ToolContext,
            ) -> impl std::future::Future<Output = Result<serde_json::Value, concierge::ToolError>> + Send {
                let store = std::sync::Arc::clone(&self.store);
                async move {
                    crate::toolkit::blocking(store.db().what(), move || {
                        Self::run(&store, args, cx).and_then(crate::toolkit::Answer::into_answer)
                    })
                    .await
                }
            }
        }
    };
}
pub(crate) use db_tool;

/// Annotations of a tool that writes, deduplicated on its idempotency key;
/// `confirm` when the person approves each call first.
pub(crate) fn writes(confirm: bool) -> concierge::ToolAnnotations {
    concierge::ToolAnnotations {
        idempotent: true,
        requires_confirmation: confirm,
        ..concierge::ToolAnnotations::default()
    }
}

/// The answer of a change: its result, or the refusal as a failed call
/// whose message is the sentence (a retry looks again).
pub(crate) fn answer(applied: Result<Applied, StoreError>) -> Result<Value, concierge::ToolError> {
    match applied {
        Ok(Applied::Changed(value)) => Ok(value),
        Ok(Applied::Unchanged(why)) => Err(concierge::ToolError::failed(why)),
        Err(e) => Err(concierge::ToolError::failed(e.to_string())),
    }
}

/// A database failure as a failed call.
pub(crate) fn failed(e: StoreError) -> concierge::ToolError {
    concierge::ToolError::failed(e.to_string())
}

/// How a person chooses who they are, whichever door they came in by:
/// the sentence that ends an "I do not know who you are" answer.
pub(crate) const HOW_TO_BE_SOMEONE: &str = "To ask as one of them, sign in with a token made for that user \
     (`concierge token new --user NAME`), or pass --user NAME on the command line.";

/// Whether the run's `user` ("jordan", "jordan.avery@example.com",
/// "C-1001", "Jordan Avery") names the person with this id, name and email.
pub(crate) fn names_person(user: &str, id: &str, name: &str, email: &str) -> bool {
    let user = user.trim().to_lowercase();
    let first = name.split_whitespace().next().unwrap_or(name).to_lowercase();
    let local = email.split('@').next().unwrap_or(email).to_lowercase();
    !user.is_empty()
        && (user == id.to_lowercase()
            || user == email.to_lowercase()
            || user == name.to_lowercase()
            || user == first
            || user == local)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_join_lines_and_keep_paragraphs() {
        assert_eq!(
            description(&[" Lists tasks,", " done ones too.", "", " Second."]),
            "Lists tasks, done ones too.\n\nSecond."
        );
    }
}
