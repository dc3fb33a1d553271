//! One profiled kernel as the Stage 3 state keeps it and result.json records it: kt-record's type (the run
//! directory's schema), under the name Stage 3 has always used.

pub use kt_record::ProfileRecord;
