// DashboardPage: the HTML of the dashboard served at GET / (http/dashboard.html,
// compiled into the binary at build time so that the page needs no files at run
// time and no external assets).
//
// Thread-safety: a constant; any thread.
#pragma once

#include <string_view>

namespace oncecount::http {

std::string_view DashboardPage();

}  // namespace oncecount::http
