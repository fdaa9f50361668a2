#include "codegen/python_install.h"

#include <cstdio>

namespace arfit::codegen {

std::string python_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

namespace {

std::string tuple(const std::vector<std::string>& items) {
  std::string s = "(";
  for (std::size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + python_string(items[i]);
  return s + (items.size() == 1 ? ",)" : ")");
}

}  // namespace

std::string python_release_guard(const std::string& consumer, const std::vector<std::string>& range) {
  return "CONSUMER = " + python_string(consumer) + "\nCONSUMER_VERSIONS = " + tuple(range) + R"PY(


def _release(version):
    """The numeric release of a version string ("0.11.0rc2" -> (0, 11, 0, 0, 0, 0)), or None."""
    import re

    match = re.match(r"v?(\d+(?:\.\d+)*)", str(version))
    if match is None:
        return None
    numbers = [int(part) for part in match.group(1).split(".")][:6]
    return tuple(numbers + [0] * (6 - len(numbers)))


def check_version(version):
    """Raise RuntimeError unless `version` lies in CONSUMER_VERSIONS: this file's values follow the rules of
    those versions only."""
    release = _release(version)
    first, last = _release(CONSUMER_VERSIONS[0]), _release(CONSUMER_VERSIONS[-1])
    if release is None or not first <= release <= last:
        raise RuntimeError(
            "arfit: this file was generated for %s %s to %s, the versions whose code the arfit that wrote it had "
            "read, and %s %s is running; regenerate it with an arfit that knows %s %s (arfit codegen "
            "--consumer-version %s refuses a version whose code it has not read)"
            % (CONSUMER, CONSUMER_VERSIONS[0], CONSUMER_VERSIONS[-1], CONSUMER, version, CONSUMER, version, version))
)PY";
}

std::string python_snapshot_guard(const std::string& consumer, const std::vector<std::string>& snapshots) {
  return "CONSUMER = " + python_string(consumer) + "\nCONSUMER_VERSIONS = " + tuple(snapshots) + R"PY(


def check_version(snapshot):
    """Raise RuntimeError unless `snapshot` is one of CONSUMER_VERSIONS."""
    if snapshot not in CONSUMER_VERSIONS:
        raise RuntimeError(
            "arfit: this file was generated for %s %s, and %s is running; regenerate it with arfit codegen "
            "--consumer-version %s" % (CONSUMER, ", ".join(CONSUMER_VERSIONS), snapshot, snapshot))
)PY";
}

}  // namespace arfit::codegen
