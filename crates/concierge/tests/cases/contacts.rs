//! The contacts team the agents-as-tools tests run: a router that calls a
//! notes agent and a contacts agent as tools, and their tools (shared by the
//! cases on every engine and by the Temporal engine's own child-workflow
//! test).

use std::sync::{Arc, Mutex};

use concierge::{
    AgentSpec, AgentTool, Choice, Reply, Route, Rules, Tool, ToolAnnotations, ToolContext, ToolError, ToolSpec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// What the tools wrote: (tool, contact id, text, idempotency key).
pub type Log = Arc<Mutex<Vec<(String, i64, String, String)>>>;

#[derive(Deserialize, JsonSchema)]
pub struct NoteArgs {
    /// Who the note is about, by name.
    contact: String,
    /// The note.
    text: String,
    /// The contact's id, when known.
    contact_id: Option<i64>,
}

/// Logs a note against a contact; asks which one when a name is ambiguous.
pub struct LogNote(pub Log);

impl Tool for LogNote {
    type Args = NoteArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "log_note",
            "Logs a note about a contact.",
            concierge::tool::schema_for::<NoteArgs>(),
        )
        .writes("notes")
    }

    async fn call(&self, args: NoteArgs, cx: ToolContext) -> Result<Value, ToolError> {
        let id = match (args.contact_id, args.contact.to_lowercase().as_str()) {
            (Some(id), _) => id,
            (None, "john") => {
                return Reply::<Value>::Choose(
                    Choice::new("Which John do you mean?", "contact_id")
                        .option(4, "John Smith (Acme, john@acme.com)")
                        .option(9, "John Park (Globex, jpark@globex.com)"),
                )
                .into_value();
            }
            (None, "mike") => 2,
            (None, other) => return Err(ToolError::failed(format!("I know no contact called {other}"))),
        };
        self.0
            .lock()
            .unwrap()
            .push(("log_note".into(), id, args.text.clone(), cx.idempotency_key.to_string()));
        Ok(json!(format!("Logged the note for contact {id}: {}.", args.text)))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct RemoveArgs {
    /// Who to remove.
    contact: String,
}

/// Removes a contact (the person approves first).
pub struct RemoveContact(pub Log);

impl Tool for RemoveContact {
    type Args = RemoveArgs;

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "remove_contact",
            "Removes a contact.",
            concierge::tool::schema_for::<RemoveArgs>(),
        )
        .annotations(ToolAnnotations {
            requires_confirmation: true,
            destructive: true,
            ..ToolAnnotations::default()
        })
        .confirm("I'll remove {contact}. Proceed?")
    }

    async fn call(&self, args: RemoveArgs, cx: ToolContext) -> Result<Value, ToolError> {
        self.0.lock().unwrap().push((
            "remove_contact".into(),
            0,
            args.contact.clone(),
            cx.idempotency_key.to_string(),
        ));
        Ok(json!(format!("Removed {}.", args.contact)))
    }
}

pub fn agents() -> Vec<AgentSpec> {
    let notes = AgentSpec::new("notes")
        .description("Logs notes about contacts.")
        .tool("log_note")
        .rules(
            Rules::new()
                .route(
                    Route::tool("log_note", json!({"contact": "{who}", "text": "{text}"}))
                        .pattern(r"(?i)note about (?P<who>\w+): (?P<text>.+)"),
                )
                .answer("{result}"),
        );
    let contacts = AgentSpec::new("contacts")
        .description("Removes contacts.")
        .tool("remove_contact")
        .rules(
            Rules::new()
                .route(Route::tool("remove_contact", json!({"contact": "{who}"})).pattern(r"(?i)remove (?P<who>\w+)"))
                .answer("{result}"),
        );
    let router = AgentSpec::new("router")
        .description("Keeps your contacts up to date.")
        .agent_tool(AgentTool::new("notes").writes("notes"))
        .agent_tool(AgentTool::new("contacts"))
        .rules(
            Rules::new()
                .every_match()
                .route(Route::tool("notes", json!({"request": "{part}"})).pattern(r"(?i)(?P<part>note about [^,;]+)"))
                .route(Route::tool("contacts", json!({"request": "{part}"})).pattern(r"(?i)(?P<part>remove \w+)"))
                .answer("{result}"),
        );
    vec![notes, contacts, router]
}
