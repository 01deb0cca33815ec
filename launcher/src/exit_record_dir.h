#pragma once
// The folder where the ranks of one local job record how they ended
// (rank_exits.h), and the exit hook library chorusrun preloads into them.

#include <string>

namespace chorus::launcher {

/// What the folder's name looks like: $TMPDIR (or /tmp)/chorusrun-exits-XXXXXX.
std::string exit_record_dir_pattern();

/// A fresh private folder named after the pattern; "" with `*error` set when
/// it cannot be made.
std::string make_exit_record_dir(std::string* error);

/// Removes the records and the folder.
void remove_exit_record_dir(const std::string& dir);

/// libchorusrun_exit_hook.so next to this chorusrun (the build tree) or at
/// its installed place relative to it; "" when there is none.
std::string find_exit_hook(const std::string& chorusrun_path);

}  // namespace chorus::launcher
