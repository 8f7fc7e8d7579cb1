//! The language reference generated from the registries (`docs/reference.md`), so that the
//! documentation lists exactly what the catalog defines.

use super::SondeCatalog;
use sonde_lang::catalog::Catalog;
use std::fmt::Write;

/// Markdown listing every probe type, builtin and function with its doc line.
pub fn markdown() -> String {
    let cat = SondeCatalog;
    let mut s = String::from(
        "# sonde language reference\n\nGenerated from the registries in `compiler/src/catalog/` \
         (`SONDE_BLESS=1 cargo test -p sonde-compiler reference` rewrites it).\n\n## Probe types\n\n\
         | attach point | aliases | description |\n|---|---|---|\n",
    );
    for p in cat.providers() {
        let aliases = p.names()[1..]
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            s,
            "| `{}` | {} | {} |",
            p.usage().replace('|', "\\|"),
            aliases,
            p.doc()
        );
    }
    s += "\n## Builtins\n\n| name | description |\n|---|---|\n";
    for b in cat.builtins() {
        let _ = writeln!(s, "| `{}` | {} |", b.name(), b.doc());
    }
    s += "\n## Functions and aggregations\n\n| signature | description |\n|---|---|\n";
    for f in cat.functions() {
        let _ = writeln!(
            s,
            "| `{}` | {} |",
            f.signature().replace('|', "\\|"),
            f.doc().replace('|', "\\|")
        );
    }
    s
}

#[cfg(test)]
mod tests {
    /// docs/reference.md is what the registries say (rewrite with SONDE_BLESS=1).
    #[test]
    fn reference_doc_matches_the_registries() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/reference.md");
        let want = super::markdown();
        if std::env::var_os("SONDE_BLESS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "docs/reference.md is out of date: run SONDE_BLESS=1 cargo test -p sonde-compiler reference"
        );
    }
}
