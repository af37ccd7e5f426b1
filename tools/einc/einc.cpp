// einc: the ein compiler driver (a thin main over ein::runEinc).
#include "ein/Driver/Driver.h"

int main(int argc, char **argv) { return ein::runEinc(argc, argv); }
