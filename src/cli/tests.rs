//! Checks over the whole command tree and the parsing of its flags.

use clap::{CommandFactory, Parser};

use super::*;

fn walk<'a>(command: &'a clap::Command, path: String, out: &mut Vec<(String, &'a clap::Command)>) {
    for sub in command.get_subcommands() {
        let sub_path = format!("{path} {}", sub.get_name());
        out.push((sub_path.clone(), sub));
        walk(sub, sub_path, out);
    }
}

fn all_commands() -> Vec<(String, clap::Command)> {
    let root = Cli::command();
    let mut found = Vec::new();
    walk(&root, "memoree".to_owned(), &mut found);
    let mut owned: Vec<(String, clap::Command)> = found.into_iter().map(|(p, c)| (p, c.clone())).collect();
    owned.push(("memoree".to_owned(), root.clone()));
    owned
}

#[test]
fn the_command_tree_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn every_command_has_a_summary_and_an_example() {
    for (path, command) in all_commands() {
        if path.ends_with(" help") {
            continue;
        }
        assert!(command.get_about().is_some(), "{path} has no about text");
        let after = command.get_after_help().map(|h| h.to_string()).unwrap_or_default();
        assert!(after.starts_with("Example"), "{path} has no example: {after:?}");
        assert!(
            after.contains("memoree "),
            "{path}'s example does not run memoree: {after:?}"
        );
    }
}

#[test]
fn the_command_tree_offers_every_wrapper() {
    let paths: Vec<String> = all_commands().into_iter().map(|(p, _)| p).collect();
    for expected in [
        "memoree init",
        "memoree context show",
        "memoree context explain",
        "memoree context resolve",
        "memoree context build",
        "memoree session exec",
        "memoree call",
        "memoree artifact put",
        "memoree artifact get",
        "memoree artifact revise",
        "memoree artifact history",
        "memoree artifact forget",
        "memoree claim assert",
        "memoree claim get",
        "memoree claim revise",
        "memoree claim retract",
        "memoree claim history",
        "memoree link",
        "memoree relation put",
        "memoree relation list",
        "memoree conflict list",
        "memoree search",
        "memoree recall",
        "memoree remember",
        "memoree checkpoint",
        "memoree pending list",
        "memoree pending show",
        "memoree pending preview",
        "memoree pending apply",
        "memoree pending drop",
        "memoree capabilities",
        "memoree instructions",
        "memoree schema",
        "memoree doctor",
        "memoree verify",
        "memoree reindex",
        "memoree backup create",
    ] {
        assert!(paths.iter().any(|p| p == expected), "missing {expected}");
    }
}

#[test]
fn defaults_follow_the_command_table() {
    let cli = Cli::try_parse_from(["memoree", "search", "a", "b"]).unwrap();
    assert!(matches!(cli.command, Command::Search(_)));
    let cli = Cli::try_parse_from(["memoree", "--pretty", "artifact", "put", "-"]).unwrap();
    assert!(cli.global.pretty);
    assert!(Cli::try_parse_from(["memoree", "artifact", "get", "x", "--force"]).is_err());
    assert!(Cli::try_parse_from(["memoree", "claim", "assert", "opinion", "x"]).is_err());
    assert!(Cli::try_parse_from(["memoree", "link", "claim:a", "derived_from", "claim:b"]).is_err());
    assert!(Cli::try_parse_from(["memoree", "link", "claim:a", "derived-from", "claim:b"]).is_ok());
    assert!(Cli::try_parse_from(["memoree", "remember", "x", "--file", "f"]).is_err());
    assert!(Cli::try_parse_from(["memoree", "remember", "--raw", "--allow-api-key", "x"]).is_err());
    assert!(Cli::try_parse_from(["memoree", "session", "exec", "--task", "t"]).is_err());
    assert!(Cli::try_parse_from(["memoree", "session", "exec", "--task", "t", "--", "true"]).is_ok());
    assert!(Cli::try_parse_from(["memoree", "init", "--workspace-id", "w"]).is_ok());
    assert!(Cli::try_parse_from(["memoree", "conflict", "list", "--horizon", "galaxy"]).is_err());
}
