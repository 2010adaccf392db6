// main() for pg and e2e test binaries.
#include "tests/support/pg_harness.h"

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  gpurent::testing::TestCluster::shutdown();
  return rc;
}
