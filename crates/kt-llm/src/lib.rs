//! LLM providers (being written).
