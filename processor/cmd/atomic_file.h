// WriteFileAtomically: write a whole file so that readers see either the old file
// or the new one, never a part (a temporary file, then rename). Used for the
// bootstrap and truth files that tests and scripts poll for.
//
// Thread-safety: pure function over the file system.
#pragma once

#include <string>

namespace oncecount::cmd {

// `text` plus a newline; false when the file cannot be written.
bool WriteFileAtomically(const std::string& path, const std::string& text);

}  // namespace oncecount::cmd
