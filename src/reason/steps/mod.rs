//! The diagnosis's three recorded steps: what the alert or problem is about (subject), what it
//! claims, measured (symptom), and the verdict settled against the measured symptom.

mod ingress_subject;
pub(crate) mod subject;
pub(crate) mod symptom;
pub(crate) mod verdict;
pub(crate) mod walk;
