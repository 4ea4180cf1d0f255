//! Keyframes of the fold, built in one pass over the records beside the replay's index, each
//! long list kept as a difference from the next keyframe's.

use super::Replay;
use super::records::{SharedAdd, Source};
use crate::model::{
    ActionState, ChatEntry, Event, Evidence, Finding, Incident, Stage, TimelineItem, ToolCallState,
    Verification,
};
use std::sync::Arc;

/// Fewest records between keyframes.
pub(super) const MIN_KEYFRAME_EVERY: usize = 64;
/// Keyframes kept at most (about), whatever the session length: seeking folds at most
/// 1/`MAX_KEYFRAMES` of the session.
pub(super) const MAX_KEYFRAMES: usize = 64;

/// The fold after the first `at` records, its long lists kept as differences.
#[derive(Debug, Clone)]
pub(super) struct Keyframe {
    pub(super) at: usize,
    /// The fold with its long lists empty and no lookup index.
    pub(super) base: Incident,
    pub(super) lists: Lists,
}

/// One list of a keyframe: the first `keep` items of the next keyframe's list, then `rest`.
#[derive(Debug, Clone)]
struct Delta<T> {
    keep: usize,
    rest: Vec<T>,
}

impl<T: Clone> Delta<T> {
    /// `mine` as a difference from `later`, the same list further on in the fold.
    fn between(mut mine: Vec<T>, later: &[T], same: impl Fn(&T, &T) -> bool) -> Delta<T> {
        let keep = mine
            .iter()
            .zip(later)
            .take_while(|(a, b)| same(a, b))
            .count();
        let rest = mine.split_off(keep);
        Delta { keep, rest }
    }

    /// Rebuild a list from the chain of differences that leads to it, nearest the head first.
    fn rebuild<'a>(head: &[T], chain: impl Iterator<Item = &'a Delta<T>>) -> Vec<T>
    where
        T: 'a,
    {
        // The list so far is head[..from_head] followed by `tail`.
        let mut from_head = head.len();
        let mut tail: Vec<T> = Vec::new();
        for d in chain {
            if d.keep <= from_head {
                from_head = d.keep;
                tail.clear();
            } else {
                tail.truncate(d.keep - from_head);
            }
            tail.extend(d.rest.iter().cloned());
        }
        let mut out = Vec::with_capacity(from_head + tail.len());
        out.extend_from_slice(&head[..from_head]);
        out.extend(tail);
        out
    }
}

/// The long lists of the fold, one field each. `changed` lists can change after an item is
/// pushed (a tool call finishing, evidence growing); `appended` lists only ever grow, so a
/// keyframe needs only their length.
macro_rules! lists {
    (changed { $($name:ident: $t:ty, $same:expr;)* } appended { $($app:ident: $at:ty;)* }) => {
        #[derive(Debug, Clone)]
        pub(super) struct Lists {
            $($name: Delta<$t>,)*
            $($app: Delta<$at>,)*
        }

        /// Lengths of the appended lists when a keyframe was taken.
        #[derive(Debug, Clone, Copy, Default)]
        struct Lens {
            $($app: usize,)*
        }

        impl Lists {
            /// Move the lists out of `inc`, as differences from `later`'s.
            fn take(inc: &mut Incident, lens: Lens, later: &Incident) -> Lists {
                Lists {
                    $($name: Delta::between(std::mem::take(&mut inc.$name), &later.$name, $same),)*
                    $($app: Delta { keep: lens.$app.min(later.$app.len()), rest: Vec::new() },)*
                }
            }

            /// Put back into `inc` the lists of the keyframe at the end of `chain`, which lists
            /// every keyframe from it to the head, nearest the head first.
            pub(super) fn restore(inc: &mut Incident, head: &Incident, chain: &[&Lists]) {
                $(inc.$name = Delta::rebuild(&head.$name, chain.iter().map(|l| &l.$name));)*
                $(inc.$app = Delta::rebuild(&head.$app, chain.iter().map(|l| &l.$app));)*
            }
        }

        /// A copy of `inc` without its appended lists (a later fold holds them whole), and
        /// their lengths.
        fn snapshot(inc: &mut Incident) -> (Incident, Lens) {
            let lens = Lens { $($app: inc.$app.len(),)* };
            let moved = ($(std::mem::take(&mut inc.$app),)*);
            let copy = inc.clone();
            let ($($app,)*) = moved;
            $(inc.$app = $app;)*
            (copy, lens)
        }
    };
}

lists! {
    changed {
    tools: ToolCallState, |a: &ToolCallState, b: &ToolCallState| a == b;
    // Bodies are shared: the same allocation is the same item, and comparing bodies would cost
    // as much as copying them.
    evidence: Arc<Evidence>, |a: &Arc<Evidence>, b: &Arc<Evidence>| Arc::ptr_eq(a, b);
    actions: ActionState, |a: &ActionState, b: &ActionState| a == b;
    }
    appended {
    timeline: TimelineItem;
    chat: ChatEntry;
    findings: Finding;
    warnings: String;
    verifications: Verification;
    }
}

/// Builds the index and the keyframes in one pass over the records.
pub(super) struct Builder {
    gap_cap: f64,
    times: Vec<f64>,
    play_at: Vec<f64>,
    stage_starts: Vec<(usize, Stage)>,
    keyframes: Vec<Keyframe>,
    /// The latest keyframe, until the next one is known to diff it against.
    pending: Option<Pending>,
    fold: Incident,
    /// The evidence item the last append grew: when appends move on, it is done growing and
    /// gives back its spare capacity.
    growing: Option<usize>,
    /// Records adding a large text item, candidates for [`Replay::shared`].
    large_adds: Vec<SharedAdd>,
    /// Evidence positions appended to after they were added.
    grown: std::collections::HashSet<usize>,
    prev_t: f64,
    play: f64,
    since_keyframe: usize,
    bytes_at_keyframe: u64,
}

/// A keyframe taken, not yet stored. Its tool calls are not copied when it is taken (a long
/// session has thousands, and most never change again): it keeps how many there were and a copy
/// of each one the fold changes before the next keyframe, taken just before the change.
struct Pending {
    at: usize,
    base: Incident,
    lens: Lens,
    tools: usize,
    saved: std::collections::HashMap<usize, ToolCallState>,
}

impl Pending {
    fn new(at: usize, base: Incident, lens: Lens, tools: usize) -> Pending {
        Pending {
            at,
            base,
            lens,
            tools,
            saved: std::collections::HashMap::new(),
        }
    }

    /// The keyframe's tool calls as a difference from `now`'s.
    fn tools(&self, now: &[ToolCallState]) -> Delta<ToolCallState> {
        let then = |i: usize| self.saved.get(&i).unwrap_or(&now[i]);
        let keep = self
            .saved
            .iter()
            .filter(|(i, old)| **i < self.tools && now[**i] != **old)
            .map(|(i, _)| *i)
            .min()
            .unwrap_or(self.tools)
            .min(now.len());
        Delta {
            keep,
            rest: (keep..self.tools.min(now.len()))
                .map(|i| then(i).clone())
                .collect(),
        }
    }
}

impl Builder {
    pub(super) fn new(gap_cap: f64) -> Builder {
        Builder {
            gap_cap,
            times: Vec::new(),
            play_at: Vec::new(),
            stage_starts: Vec::new(),
            keyframes: Vec::new(),
            pending: Some(Pending::new(0, Incident::new(), Lens::default(), 0)),
            fold: Incident::new(),
            growing: None,
            large_adds: Vec::new(),
            grown: std::collections::HashSet::new(),
            prev_t: 0.0,
            play: 0.0,
            since_keyframe: 0,
            bytes_at_keyframe: 0,
        }
    }

    /// Fold record number `self.times.len()`; `cut` says a keyframe is due after it.
    pub(super) fn push(
        &mut self,
        t: f64,
        event: std::borrow::Cow<'_, Event>,
        cut: impl Fn(usize, u64) -> bool,
        bytes: u64,
    ) {
        let i = self.times.len();
        let tt = if t.is_finite() { t } else { self.prev_t };
        // Out-of-order times replay as simultaneous rather than going backwards.
        self.play += (tt - self.prev_t).clamp(0.0, self.gap_cap);
        self.prev_t = self.prev_t.max(tt);
        self.play_at.push(self.play);
        self.times.push(t);
        if let Event::StageStarted { stage } = &*event {
            self.stage_starts.push((i, *stage));
        }
        // The tool calls `Incident::apply` changes in place: the latest call with the id named.
        let touched = match &*event {
            Event::ToolSucceeded { call_id, .. } | Event::ToolFailed { call_id, .. } => {
                self.fold.tool_index(call_id)
            }
            Event::EvidenceAdded { evidence } => evidence
                .call_id
                .as_deref()
                .and_then(|c| self.fold.tool_index(c)),
            _ => None,
        };
        if let (Some(k), Some(p)) = (touched, &mut self.pending)
            && k < p.tools
        {
            p.saved
                .entry(k)
                .or_insert_with(|| self.fold.tools[k].clone());
        }
        if let Event::EvidenceAppended { evidence_id, .. } = &*event {
            let target = self.fold.evidence_index(evidence_id);
            if target != self.growing {
                self.shrink_growing();
                self.growing = target;
            }
            self.grown.extend(target);
        }
        // Only records read from a file (`bytes` > 0) can be passed over when replayed.
        if let Event::EvidenceAdded { evidence } = &*event
            && bytes > 0
            && matches!(&evidence.body, crate::model::EvidenceBody::Text { text, .. }
                if text.len() >= crate::session::large_line::LARGE_LINE)
        {
            self.large_adds.push(SharedAdd {
                record: i,
                item: self.fold.evidence.len(),
                end: bytes,
            });
        }
        match event {
            std::borrow::Cow::Borrowed(event) => self.fold.apply(t, event),
            std::borrow::Cow::Owned(event) => self.fold.apply_owned(t, event),
        }
        self.since_keyframe += 1;
        if self.since_keyframe >= MIN_KEYFRAME_EVERY
            && cut(self.since_keyframe, bytes - self.bytes_at_keyframe)
        {
            self.since_keyframe = 0;
            self.bytes_at_keyframe = bytes;
            self.settle_pending();
            // Neither the tool calls nor the lookup indexes are copied into the keyframe.
            let tools = std::mem::take(&mut self.fold.tools);
            let evidence_at = std::mem::take(&mut self.fold.evidence_at);
            let tool_at = std::mem::take(&mut self.fold.tool_at);
            let (copy, lens) = snapshot(&mut self.fold);
            self.fold.tools = tools;
            self.fold.evidence_at = evidence_at;
            self.fold.tool_at = tool_at;
            self.pending = Some(Pending::new(i + 1, copy, lens, self.fold.tools.len()));
        }
    }

    /// Give back the spare capacity of the body appends last grew.
    fn shrink_growing(&mut self) {
        if let Some(e) = self
            .growing
            .and_then(|g| self.fold.evidence.get_mut(g))
            .and_then(Arc::get_mut)
            && let crate::model::EvidenceBody::Text { text, .. } = &mut e.body
        {
            text.shrink_to_fit();
        }
    }

    /// Store the pending keyframe as a difference from the fold as it stands now.
    fn settle_pending(&mut self) {
        if let Some(mut p) = self.pending.take() {
            let tools = p.tools(&self.fold.tools);
            let mut lists = Lists::take(&mut p.base, p.lens, &self.fold);
            lists.tools = tools;
            self.keyframes.push(Keyframe {
                at: p.at,
                base: p.base,
                lists,
            });
        }
    }

    pub(super) fn finish(mut self, source: Source) -> Replay {
        self.settle_pending();
        // Nothing grows any more: give back what growth reserved (bodies grown by appends hold
        // up to half as much again as their text).
        self.times.shrink_to_fit();
        self.play_at.shrink_to_fit();
        for e in &mut self.fold.evidence {
            if let Some(e) = Arc::get_mut(e)
                && let crate::model::EvidenceBody::Text { text, .. } = &mut e.body
            {
                text.shrink_to_fit();
            }
        }
        let grown = self.grown;
        let shared: Vec<SharedAdd> = self
            .large_adds
            .into_iter()
            .filter(|a| !grown.contains(&a.item) && a.item < self.fold.evidence.len())
            .collect();
        Replay {
            source,
            shared,
            times: self.times,
            play_at: self.play_at,
            stage_starts: self.stage_starts,
            gap_cap: self.gap_cap,
            keyframes: self.keyframes,
            last: self.fold,
            truncated: false,
            pos: 0,
            incident: Incident::new(),
            play: 0.0,
            speed: 1.0,
            paused: false,
        }
    }
}
