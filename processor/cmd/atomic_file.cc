#include "processor/cmd/atomic_file.h"

#include <cstdio>
#include <fstream>

namespace oncecount::cmd {

bool WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream file(tmp, std::ios::trunc);
    file << text << "\n";
    if (!file.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace oncecount::cmd
