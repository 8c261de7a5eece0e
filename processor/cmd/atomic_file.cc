#include "processor/cmd/atomic_file.h"

#include <cstdio>
#include <fstream>

namespace oncecount::cmd {

base::Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream file(tmp, std::ios::trunc);
    file << text << "\n";
    if (!file.flush()) return base::IoFailure("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return base::IoFailure("cannot rename " + tmp + " to " + path);
  }
  return {};
}

}  // namespace oncecount::cmd
