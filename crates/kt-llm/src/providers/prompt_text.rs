//! A request as plain text, for the providers whose other side is a person or a program: every message under
//! its role, then the JSON schema the answer must follow when one is asked.

use std::fmt::Write as _;

use crate::request::{LlmRequest, Role};

/// The messages of `request` under `## System` / `## User` / `## Assistant` headings, then an
/// `## Answer format` section with the schema when the request has one.
pub(crate) fn prompt_text(request: &LlmRequest) -> String {
    let mut text = String::new();
    for m in &request.messages {
        let role = match m.role {
            Role::System => "System",
            Role::User => "User",
            Role::Assistant => "Assistant",
        };
        let _ = write!(text, "## {role}\n\n{}\n\n", m.content.trim_end());
    }
    if let Some(schema) = &request.schema {
        let _ = write!(
            text,
            "## Answer format\n\nAnswer with a single JSON value (in a ```json fence or bare) that matches this \
             JSON schema:\n\n```json\n{}\n```\n",
            serde_json::to_string_pretty(&schema.schema).unwrap_or_default()
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::OutputSchema;

    #[test]
    fn roles_and_schema_are_written_in_order() {
        let req = LlmRequest::new("n")
            .system("be brief")
            .user("plan it")
            .schema(OutputSchema {
                name: "Plan".into(),
                schema: serde_json::json!({"type": "object"}),
            });
        let text = prompt_text(&req);
        let sys = text.find("## System\n\nbe brief").unwrap();
        let user = text.find("## User\n\nplan it").unwrap();
        let format = text.find("## Answer format").unwrap();
        assert!(sys < user && user < format, "{text}");
        assert!(text.contains("\"type\": \"object\""));
        assert!(!prompt_text(&LlmRequest::new("n").user("q")).contains("Answer format"));
    }
}
