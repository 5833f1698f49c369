//===- PassVerification.cpp - Verify after every pass, or not -------------===//

#include "lowering/PassVerification.h"

#include "mlir/Pass/PassManager.h"

#include <atomic>
#include <cstdlib>
#include <string_view>

namespace lowbit {
namespace {

/// -1: no override; 0 or 1: setVerifyAfterEachPass's value.
std::atomic<int> overrideValue{-1};

bool defaultFromEnvironment() {
  if (const char *value = std::getenv("LOWBIT_VERIFY_PASSES")) {
    std::string_view text = value;
    if (text == "1" || text == "on" || text == "true")
      return true;
    if (text == "0" || text == "off" || text == "false")
      return false;
  }
#ifdef NDEBUG
  return false;
#else
  return true;
#endif
}

} // namespace

bool verifyAfterEachPass() {
  int forced = overrideValue.load(std::memory_order_relaxed);
  if (forced >= 0)
    return forced == 1;
  static const bool fromEnvironment = defaultFromEnvironment();
  return fromEnvironment;
}

void setVerifyAfterEachPass(std::optional<bool> enabled) {
  overrideValue.store(enabled ? int(*enabled) : -1, std::memory_order_relaxed);
}

void configureVerifier(mlir::PassManager &pm) {
  pm.enableVerifier(verifyAfterEachPass());
}

} // namespace lowbit
