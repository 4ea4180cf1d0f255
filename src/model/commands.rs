//! The one command language: every console key, palette command, chat slash command and agent
//! chat command, with its name, default keys, help text and where it applies.
//!
//! The keymap, the `?` help, the `:` palette, `/name` in chat, the key-hint bar and the agent's
//! chat answers all read this table; nothing else names a command.

/// Where a command applies. Key scopes are looked up in order by the console; `Agent` commands
/// are answered by the agent from the conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    Global,
    Navigation,
    Approval,
    Replay,
    /// Keys inside the `:` palette.
    Palette,
    /// Keys while typing in the chat pane.
    Chat,
    /// Asked of the agent in chat (`why`, `/runbook NAME`).
    Agent,
}

impl Scope {
    pub const ALL: [Scope; 7] = [
        Scope::Global,
        Scope::Navigation,
        Scope::Approval,
        Scope::Replay,
        Scope::Palette,
        Scope::Chat,
        Scope::Agent,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Scope::Global => "Global",
            Scope::Navigation => "Timeline & evidence",
            Scope::Approval => "Approval",
            Scope::Replay => "Replay",
            Scope::Palette => "Command palette (:)",
            Scope::Chat => "Chat",
            Scope::Agent => "Ask the agent (in chat; / prefix optional)",
        }
    }
}

/// One row of the table.
#[derive(Debug)]
pub struct Spec {
    pub cmd: Cmd,
    /// The name used by `[keys]`, `:name`, `/name` and the agent.
    pub name: &'static str,
    /// Older names still accepted (config files written before a rename).
    pub aliases: &'static [&'static str],
    pub scope: Scope,
    /// Default keys, in `[keys]` syntax.
    pub keys: &'static [&'static str],
    /// Argument hint for `:name ARG`; empty when there is none.
    pub arg: &'static str,
    pub help: &'static str,
    /// Short label in the key-hint bar; empty when it is never hinted.
    pub hint: &'static str,
    /// Runs from the palette and as a slash command in chat.
    pub palette: bool,
    /// Agent commands: words in a free question that ask for this answer.
    pub words: &'static [&'static str],
}

macro_rules! table {
    ($($variant:ident {
        name: $name:literal,
        $(aliases: [$($alias:literal),*],)?
        scope: $scope:ident,
        keys: [$($key:literal),*],
        $(arg: $arg:literal,)?
        help: $help:literal,
        $(hint: $hint:literal,)?
        $(palette: $palette:literal,)?
        $(words: [$($word:literal),*],)?
    })*) => {
        /// A command of the console or the agent.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Cmd { $($variant),* }

        /// Every command, in help order.
        pub const TABLE: &[Spec] = &[$(Spec {
            cmd: Cmd::$variant,
            name: $name,
            aliases: &[$($($alias),*)?],
            scope: Scope::$scope,
            keys: &[$($key),*],
            arg: table!(@or $($arg)?, ""),
            help: $help,
            hint: table!(@or $($hint)?, ""),
            palette: table!(@or $($palette)?, false),
            words: &[$($($word),*)?],
        }),*];
    };
    (@or $v:expr, $d:expr) => { $v };
    (@or , $d:expr) => { $d };
}

table! {
    Quit { name: "quit", scope: Global, keys: ["q", "ctrl-c"],
        help: "quit (the session file is kept)", hint: "quit", palette: true, }
    Help { name: "help", scope: Global, keys: ["?"], help: "this help", hint: "help",
        palette: true, }
    Palette { name: "palette", scope: Global, keys: [":"], help: "command palette",
        hint: "cmd", }
    Search { name: "search", scope: Global, keys: ["/"], arg: "TEXT",
        help: "search the focused pane, mark every match (n/N jump)", hint: "search",
        palette: true, }
    Filter { name: "filter", aliases: ["filter_rows"], scope: Global, keys: ["&"], arg: "TEXT",
        help: "keep only the rows of the focused pane that match", hint: "filter",
        palette: true, }
    NextMatch { name: "next_match", scope: Global, keys: ["n"], help: "next match",
        hint: "next", }
    PrevMatch { name: "prev_match", scope: Global, keys: ["N"], help: "previous match",
        hint: "prev", }
    Back { name: "back", scope: Global, keys: ["esc"], help: "back / close / clear the search",
        hint: "back", }
    NextPane { name: "next_pane", scope: Global, keys: ["tab"], help: "next pane",
        hint: "pane", }
    PrevPane { name: "prev_pane", scope: Global, keys: ["backtab"], help: "previous pane", }
    PaneTimeline { name: "pane_timeline", scope: Global, keys: ["1"], help: "timeline pane", }
    PaneEvidence { name: "pane_evidence", scope: Global, keys: ["2"], help: "evidence pane", }
    PaneChat { name: "pane_chat", scope: Global, keys: ["3"],
        help: "chat pane (type, enter sends, esc leaves)", hint: "chat", }
    PaneSummary { name: "pane_summary", scope: Global, keys: ["4"],
        help: "diagnosis summary pane", }
    Pane { name: "pane", scope: Global, keys: [], arg: "timeline|evidence|chat|summary",
        help: "focus a pane", palette: true, }
    OpenApproval { name: "approval", aliases: ["open_approval"], scope: Global, keys: ["a"],
        help: "open the pending approval", hint: "approval", palette: true, }
    Report { name: "report", scope: Global, keys: ["r"],
        help: "show the report (rendered markdown)", hint: "report", palette: true, }
    SkipAhead { name: "skip_ahead", scope: Global, keys: ["f"],
        help: "demo: skip ahead (calls answer at once)", hint: "skip ahead", palette: true, }
    Cancel { name: "cancel", scope: Global, keys: [], help: "cancel the investigation",
        palette: true, }
    Export { name: "export", scope: Global, keys: [],
        help: "write the report (markdown) next to the session file", palette: true, }
    Follow { name: "follow", scope: Global, keys: [], help: "follow the live timeline",
        palette: true, }
    Theme { name: "theme", scope: Global, keys: [], arg: "default|light|high-contrast|mono",
        help: "switch the colour theme", palette: true, }
    Down { name: "down", scope: Navigation, keys: ["j", "down"], help: "down", hint: "move", }
    Up { name: "up", scope: Navigation, keys: ["k", "up"], help: "up", hint: "move", }
    Top { name: "top", scope: Navigation, keys: ["g", "home"], help: "top", }
    Bottom { name: "bottom", scope: Navigation, keys: ["G", "end"],
        help: "bottom (timeline: follow live)", }
    PageDown { name: "half_page_down", scope: Navigation, keys: ["ctrl-d", "pagedown"],
        help: "half page down", hint: "scroll", }
    PageUp { name: "half_page_up", scope: Navigation, keys: ["ctrl-u", "pageup"],
        help: "half page up", hint: "scroll", }
    PanLeft { name: "pan_left", scope: Navigation, keys: ["h", "left"],
        help: "pan left (evidence)", hint: "pan", }
    PanRight { name: "pan_right", scope: Navigation, keys: ["l", "right"],
        help: "pan right (evidence)", hint: "pan", }
    Wrap { name: "wrap", scope: Navigation, keys: ["w"], help: "wrap long lines on/off",
        hint: "wrap", palette: true, }
    Zoom { name: "zoom", scope: Navigation, keys: ["z"],
        help: "zoom the focused pane to full screen", hint: "zoom", palette: true, }
    Approve { name: "approve", scope: Approval, keys: ["a"], help: "approve", hint: "approve", }
    Confirm { name: "confirm", scope: Approval, keys: ["ctrl-y"],
        help: "confirm high risk (or type the target name + enter)", hint: "confirm", }
    Deny { name: "deny", scope: Approval, keys: ["d"], help: "deny, with a reason",
        hint: "deny", }
    Edit { name: "edit", scope: Approval, keys: ["e"], help: "edit parameters (ctrl-s saves)",
        hint: "edit", }
    TogglePlay { name: "toggle_play", scope: Replay, keys: ["space"], help: "play / pause",
        hint: "play", }
    Step { name: "step", scope: Replay, keys: ["."], help: "step one event", hint: "step", }
    PrevStage { name: "prev_stage", scope: Replay, keys: ["["], help: "previous stage",
        hint: "stage", }
    NextStage { name: "next_stage", scope: Replay, keys: ["]"], help: "next stage",
        hint: "stage", }
    Slower { name: "slower", scope: Replay, keys: ["<"], help: "slower", hint: "speed", }
    Faster { name: "faster", scope: Replay, keys: [">"], help: "faster", hint: "speed", }
    Seek { name: "seek", scope: Replay, keys: ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"],
        arg: "PERCENT", help: "seek to 0%-90% (:seek PERCENT for any point)", hint: "seek",
        palette: true, }
    Speed { name: "speed", scope: Replay, keys: [], arg: "0.25..64",
        help: "playback speed (times real time)", palette: true, }
    Complete { name: "complete", scope: Palette, keys: ["tab"], help: "complete the command",
        hint: "complete", }
    Run { name: "run", scope: Palette, keys: ["enter"], help: "run the command", hint: "run", }
    Send { name: "send", scope: Chat, keys: ["enter"],
        help: "send (/name runs a command, e.g. /report)", hint: "send", }
    Why { name: "why", scope: Agent, keys: [], help: "the diagnosis and its evidence",
        words: ["why", "cause", "diagnos"], }
    RuledOut { name: "ruled_out", scope: Agent, keys: [], help: "what was ruled out, and why",
        words: ["ruled", "not "], }
    Evidence { name: "evidence", scope: Agent, keys: [], help: "the evidence gathered",
        words: ["evidence", "show"], }
    Actions { name: "actions", scope: Agent, keys: [], help: "the actions and their state",
        words: ["action", "fix", "approve"], }
    Status { name: "status", scope: Agent, keys: [], help: "where the investigation is",
        words: ["status", "where", "progress"], }
    Runbooks { name: "runbooks", scope: Agent, keys: [], help: "the runbooks known", }
    Runbook { name: "runbook", scope: Agent, keys: [], arg: "NAME",
        help: "a runbook's steps (the agent runs it when it matches)", palette: true, }
    Tool { name: "tool", scope: Agent, keys: [], arg: "KIND {JSON}",
        help: "run a read tool by hand (catalog or MCP); its result is evidence", palette: true, }
    Note { name: "note", scope: Agent, keys: [], arg: "TEXT",
        help: "attach a note to this session: every later recall shows it", palette: true, }
}

impl Cmd {
    /// Every command, in table order.
    pub fn all() -> impl Iterator<Item = Cmd> {
        TABLE.iter().map(|s| s.cmd)
    }

    pub fn spec(self) -> &'static Spec {
        // The table is built from the same list as the enum, so every variant has its row.
        TABLE.iter().find(|s| s.cmd == self).unwrap_or(&TABLE[0])
    }

    pub fn name(self) -> &'static str {
        self.spec().name
    }

    pub fn scope(self) -> Scope {
        self.spec().scope
    }

    pub fn description(self) -> &'static str {
        self.spec().help
    }

    pub fn default_keys(self) -> &'static [&'static str] {
        self.spec().keys
    }

    /// The command called `name` (or an older alias of it).
    pub fn from_name(name: &str) -> Option<Cmd> {
        TABLE
            .iter()
            .find(|s| s.name == name || s.aliases.contains(&name))
            .map(|s| s.cmd)
    }
}

/// Commands runnable as `:name` in the console and `/name` in chat.
pub fn palette() -> impl Iterator<Item = &'static Spec> {
    TABLE.iter().filter(|s| s.palette)
}

/// The agent's chat commands, in the order a free question is matched against them.
pub fn agent() -> impl Iterator<Item = &'static Spec> {
    TABLE.iter().filter(|s| s.scope == Scope::Agent)
}

/// `name ARG` as shown in help and the palette.
pub fn usage(spec: &Spec) -> String {
    if spec.arg.is_empty() {
        spec.name.to_string()
    } else {
        format!("{} {}", spec.name, spec.arg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_and_aliases_are_unique_and_every_variant_has_one_row() {
        let mut seen = HashSet::new();
        for s in TABLE {
            for n in std::iter::once(&s.name).chain(s.aliases) {
                assert!(seen.insert(*n), "two commands are called {n:?}");
            }
            assert_eq!(s.cmd.spec().name, s.name);
        }
    }

    #[test]
    fn agent_commands_have_no_keys_and_key_commands_have_help() {
        for s in TABLE {
            assert!(!s.help.is_empty(), "{} has no help", s.name);
            if s.scope == Scope::Agent {
                assert!(s.keys.is_empty(), "{} is the agent's", s.name);
            }
        }
    }
}
