// gridtrain-prepare: the `gridtrain prepare` command as a standalone program (no MPI initialisation needed).
#include "src/data/prepare.hpp"

int main(int argc, char** argv) {
  // prepare_main expects argv[0] to be the command name, which is what a program's argv[0] already is
  return gt::prepare_main(argc, argv);
}
