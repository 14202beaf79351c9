//! Integration tests of the fuzz targets' bodies: the stable replay of the committed
//! corpora (`fuzz/corpus/`), which CI runs through `cargo test --workspace`.

mod every_committed_corpus_file_passes_its_target;
