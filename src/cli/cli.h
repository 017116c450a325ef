// The trainwatch command line: argv in, exit code out. Exceptions stop here.
#pragma once

namespace tw::cli {

int Main(int argc, char** argv);

}  // namespace tw::cli
