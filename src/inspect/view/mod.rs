//! Markup shared by the pages: the layout, escaping of untrusted text, evidence spans,
//! diffs, the relation graph and small widgets. Nothing here talks to the daemon.

pub mod diff;
pub mod graph;
pub mod layout;
pub mod source;
pub mod text;
pub mod widgets;
