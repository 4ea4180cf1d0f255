//! YAML runbooks: parse, validate with file:line:column errors, match alerts, render params.
