//! `rfs lucene dump|info`: read a Lucene index directory directly.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum LuceneCommand {
    /// Print one JSON line per live document (the format of the fixtures' golden files).
    Dump {
        /// The index directory (holding `segments_N`).
        dir: std::path::PathBuf,
        /// Numeric doc-values field that marks soft-deleted documents.
        #[arg(long, env = "RFS_SOFT_DELETES_FIELD")]
        soft_deletes_field: Option<String>,
    },
    /// Print segments, Lucene versions, codecs and modes, max doc and live counts.
    Info {
        /// The index directory (holding `segments_N`).
        dir: std::path::PathBuf,
    },
}

pub fn run(cmd: LuceneCommand) -> anyhow::Result<u8> {
    match cmd {
        LuceneCommand::Dump { dir, .. } | LuceneCommand::Info { dir } => {
            let d = lucene::FsDirectory::open(&dir)?;
            let mut files = lucene::Directory::list_files(&d)?;
            files.sort();
            anyhow::bail!(
                "{}: the Lucene reader is not built yet ({} files)",
                dir.display(),
                files.len()
            )
        }
    }
}
