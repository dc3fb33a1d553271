// A helper header in the style of vendor samples: host-only string utilities a kernel never uses.
#pragma once
#include <strings.h>
#include <exception>
#include <stdio.h>

inline int parse_flag(const char *arg) { return strcasecmp(arg, "--quick") == 0; }

struct CheckFailed : std::exception {
  const char *what() const noexcept override { return "check failed"; }
};
