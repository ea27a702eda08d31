//! `concierge webhook add|list|deliveries|pause|resume|delete`: where a
//! running `concierge serve` (or `chat`, `worker`) on the same database
//! posts, signed, when a tenant's runs finish, need the person or fail, and
//! when its schedules fire.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use concierge::webhook::{Delivery, DeliveryState, NewWebhook, Webhook, WebhookEvent, show_events};
use concierge::{Error, Result, Runtime};

/// `concierge webhook`.
#[derive(Debug, Args)]
pub struct WebhookArgs {
    #[command(subcommand)]
    pub command: WebhookCommand,
}

/// Whose webhooks.
#[derive(Debug, Args)]
pub struct Tenant {
    /// The tenant (a token's tenant); none on a server without tokens.
    #[arg(long)]
    pub tenant: Option<String>,
}

fn event(name: &str) -> std::result::Result<WebhookEvent, String> {
    WebhookEvent::parse(name).map_err(|e| e.to_string())
}

/// What to do with webhooks.
#[derive(Debug, Subcommand)]
pub enum WebhookCommand {
    /// Registers a webhook: URL is posted to, signed, for each --event; prints its signing secret once.
    Add {
        #[command(flatten)]
        tenant: Tenant,
        /// Where deliveries are posted (http:// or https://).
        url: String,
        /// What it is told about: run.finished, run.needs_input, run.failed,
        /// schedule.fired (repeat the flag; all four without it).
        #[arg(long = "event", value_parser = event)]
        events: Vec<WebhookEvent>,
        /// What it is for, in words.
        #[arg(long)]
        description: Option<String>,
    },
    /// Lists a tenant's webhooks with their ids.
    List {
        #[command(flatten)]
        tenant: Tenant,
        /// Prints JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Shows a webhook's latest deliveries, newest first.
    Deliveries {
        #[command(flatten)]
        tenant: Tenant,
        /// The webhook's id (from `webhook list`).
        id: String,
        /// How many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Prints JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Holds a webhook's deliveries until it is resumed.
    Pause {
        #[command(flatten)]
        tenant: Tenant,
        /// The webhook's id.
        id: String,
    },
    /// Resumes a webhook: what waited goes.
    Resume {
        #[command(flatten)]
        tenant: Tenant,
        /// The webhook's id.
        id: String,
    },
    /// Deletes a webhook and what waits to go to it.
    Delete {
        #[command(flatten)]
        tenant: Tenant,
        /// The webhook's id.
        id: String,
    },
}

fn json<T: serde::Serialize>(value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Error::Storage(e.to_string()))?;
    println!("{text}");
    Ok(())
}

pub async fn webhook(rt: &Runtime, args: &WebhookArgs) -> Result<ExitCode> {
    let store = rt.webhooks();
    match &args.command {
        WebhookCommand::Add {
            tenant,
            url,
            events,
            description,
        } => {
            let events = if events.is_empty() {
                WebhookEvent::ALL.to_vec()
            } else {
                events.clone()
            };
            let mut new = NewWebhook::new(tenant.tenant.as_deref(), url.as_str(), events)?;
            if let Some(description) = description {
                new = new.description(description.as_str());
            }
            // The operator at the command line may post anywhere, inside
            // addresses included; a tenant's request to the server may not.
            let created = store.add(new).await?;
            println!("Added {}: {}", created.webhook.id, describe(&created.webhook));
            println!(
                "Its signing secret (shown only now; check each delivery's webhook-signature with it):\n{}",
                created.secret
            );
        }
        WebhookCommand::List { tenant, json: as_json } => {
            let found = store.list(tenant.tenant.as_deref()).await?;
            if *as_json {
                json(&found)?;
            } else if found.is_empty() {
                println!("{} has no webhooks.", whose(tenant));
            } else {
                for webhook in found {
                    println!("{}  {}", webhook.id, describe(&webhook));
                }
            }
        }
        WebhookCommand::Deliveries {
            tenant,
            id,
            limit,
            json: as_json,
        } => {
            let Some(found) = store.deliveries(tenant.tenant.as_deref(), id, *limit).await? else {
                return Ok(unknown(tenant, id));
            };
            if *as_json {
                json(&found)?;
            } else if found.is_empty() {
                println!("Nothing was sent to {id} yet.");
            } else {
                for delivery in found {
                    println!("{}", delivery_line(&delivery));
                }
            }
        }
        WebhookCommand::Pause { tenant, id } | WebhookCommand::Resume { tenant, id } => {
            let pause = matches!(args.command, WebhookCommand::Pause { .. });
            match store.set_paused(tenant.tenant.as_deref(), id, pause).await? {
                Some(webhook) => println!(
                    "{} {id}: {}",
                    if pause { "Paused" } else { "Resumed" },
                    describe(&webhook)
                ),
                None => return Ok(unknown(tenant, id)),
            }
        }
        WebhookCommand::Delete { tenant, id } => {
            if !rt.delete_webhook(tenant.tenant.as_deref(), id).await? {
                return Ok(unknown(tenant, id));
            }
            println!("Deleted {id}.");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn whose(tenant: &Tenant) -> String {
    match &tenant.tenant {
        Some(name) => format!("Tenant {name}"),
        None => "This deployment".into(),
    }
}

fn unknown(tenant: &Tenant, id: &str) -> ExitCode {
    eprintln!(
        "{} has no webhook {id}; `concierge webhook list` shows the ids.",
        whose(tenant)
    );
    ExitCode::FAILURE
}

/// A webhook in one line.
fn describe(webhook: &Webhook) -> String {
    let mut line = format!("posts {} to {}", show_events(&webhook.events), webhook.url);
    if let Some(description) = &webhook.description {
        line.push_str(&format!(" ({description})"));
    }
    if webhook.paused {
        line.push_str(", paused");
    }
    line
}

/// A delivery in one line.
fn delivery_line(delivery: &Delivery) -> String {
    let when = concierge::schedule::show_time(delivery.created_at);
    let tries = if delivery.attempts == 1 { "attempt" } else { "attempts" };
    let state = match delivery.state {
        DeliveryState::Delivered => format!("delivered after {} {tries}", delivery.attempts),
        DeliveryState::Pending => match delivery.next_at {
            Some(next) if delivery.attempts > 0 => format!(
                "waiting: {} {tries} failed, next at {}",
                delivery.attempts,
                concierge::schedule::show_time(next)
            ),
            _ => "waiting to go".to_string(),
        },
        DeliveryState::GaveUp => format!("given up after {} {tries}", delivery.attempts),
    };
    let mut line = format!("{}  {} at {when}: {state}", delivery.event_id, delivery.event);
    if let (Some(error), false) = (&delivery.last_error, delivery.state == DeliveryState::Delivered) {
        line.push_str(&format!(" ({error})"));
    }
    line
}
