// trainwatch's entry point: everything lives behind tw::cli::Main.
#include "cli/cli.h"

int main(int argc, char** argv) { return tw::cli::Main(argc, argv); }
