// lib/platform/real_functions.h: a real function's slot resolves a name once,
// and a name that is not there is looked up again only after the loader has
// loaded another object (a failed lookup searches the library path: done on
// every call it cost 17 us a call).
#include "lib/platform/real_functions.h"

#include <dlfcn.h>

#include <cstdio>

#include "gtest/gtest.h"

namespace gmt {
namespace {

TEST(RealSlotTest, AFoundFunctionIsLookedUpOnce) {
  static RealSlot<int (*)(const char*)> slot("puts", /*driver=*/false);
  const uint64_t before = RealSlotLookups();
  ASSERT_NE(slot.Get(), nullptr);
  for (int i = 0; i < 10; ++i) EXPECT_NE(slot.Get(), nullptr);
  EXPECT_EQ(RealSlotLookups(), before + 1);
}

TEST(RealSlotTest, AMissingNameIsLookedUpAgainOnlyAfterALoad) {
  static RealSlot<void (*)()> slot("gmt_no_such_function_anywhere",
                                   /*driver=*/true);
  ASSERT_NE(LoadedObjectsAdded(), 0u) << "glibc counts the loaded objects";
  const uint64_t before = RealSlotLookups();
  EXPECT_EQ(slot.Get(), nullptr);
  EXPECT_EQ(RealSlotLookups(), before + 1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(slot.Get(), nullptr);
  EXPECT_EQ(RealSlotLookups(), before + 1);
  // A library loaded since: the driver could be among what came.
  const uint64_t adds = LoadedObjectsAdded();
  void* lib = dlopen("libutil.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr || LoadedObjectsAdded() == adds) {
    if (lib != nullptr) dlclose(lib);
    GTEST_SKIP() << "no library to load that is not loaded already";
  }
  EXPECT_EQ(slot.Get(), nullptr);
  EXPECT_EQ(RealSlotLookups(), before + 2);
  EXPECT_EQ(slot.Get(), nullptr);
  EXPECT_EQ(RealSlotLookups(), before + 2);
  dlclose(lib);
}

}  // namespace
}  // namespace gmt
