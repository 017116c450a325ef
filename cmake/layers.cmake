# The stages of src/, each a static library linked only to the stages below it, in the
# direction data flows: watch -> read -> decode -> store -> ingest -> diagnose -> notify, with
# app wiring them and cli on top. A stage's code may use only its own folders and what its
# DEPS reach (transitively). Two checks hold every build to it:
#   - includes: tools/check_layers.cc reads every #include "folder/..." in src/ before any
#     stage compiles, and fails the build naming the file and line of a back-edge;
#   - links: tw_layer_check_<stage> links the whole of that stage's archive (every object, used
#     or not) with only its DEPS, so a call into a stage above is an undefined reference.

# tw_stage(NAME <stage> DIRS <folders of src/> [DEPS <stages>] [SOURCES <extra>] [LIBS <external>])
function(tw_stage)
  cmake_parse_arguments(S "" "NAME" "DIRS;DEPS;SOURCES;LIBS" ${ARGN})
  set(sources ${S_SOURCES})
  foreach(dir IN LISTS S_DIRS)
    file(GLOB found CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/${dir}/*.cc)
    list(APPEND sources ${found})
  endforeach()
  add_library(tw_${S_NAME} STATIC ${sources})
  target_include_directories(tw_${S_NAME} PUBLIC ${CMAKE_SOURCE_DIR}/src)
  set(deps "")
  foreach(d IN LISTS S_DEPS)
    list(APPEND deps tw_${d})
  endforeach()
  target_link_libraries(tw_${S_NAME} PUBLIC ${deps} ${S_LIBS})
  target_compile_options(tw_${S_NAME} PRIVATE ${TW_WARNINGS})
  add_dependencies(tw_${S_NAME} tw_layers)

  # The folders this stage may include: its own and, transitively, its DEPS' folders.
  set(allowed ${S_DIRS})
  foreach(d IN LISTS S_DEPS)
    get_property(below GLOBAL PROPERTY TW_STAGE_DIRS_${d})
    list(APPEND allowed ${below})
  endforeach()
  list(REMOVE_DUPLICATES allowed)
  set_property(GLOBAL PROPERTY TW_STAGE_DIRS_${S_NAME} ${allowed})
  list(JOIN allowed "," allowed_csv)
  foreach(dir IN LISTS S_DIRS)
    set_property(GLOBAL APPEND PROPERTY TW_LAYER_TABLE "${dir}:${allowed_csv}")
  endforeach()

  add_executable(tw_layer_check_${S_NAME} ${CMAKE_SOURCE_DIR}/cmake/layer_check_main.cc)
  target_link_libraries(tw_layer_check_${S_NAME} PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,tw_${S_NAME}>")
endfunction()

# Declared before the stages (they depend on it); the table is filled in by tw_stage() and
# written by tw_layers_finish(), after the last stage.
function(tw_layers_begin)
  set(gen ${CMAKE_BINARY_DIR}/generated)
  add_executable(tw_check_layers ${CMAKE_SOURCE_DIR}/tools/check_layers.cc)
  file(GLOB_RECURSE watched CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/*.h ${CMAKE_SOURCE_DIR}/src/*.cc)
  add_custom_command(
    OUTPUT ${gen}/layers.stamp
    COMMAND tw_check_layers ${CMAKE_SOURCE_DIR}/src ${gen}/layers.txt ${gen}/layers.stamp
    DEPENDS ${watched} ${gen}/layers.txt tw_check_layers
    COMMENT "checking that src/ includes only downwards (cmake/layers.cmake)"
    VERBATIM)
  add_custom_target(tw_layers DEPENDS ${gen}/layers.stamp)
endfunction()

function(tw_layers_finish)
  get_property(table GLOBAL PROPERTY TW_LAYER_TABLE)
  list(JOIN table "\n" text)
  file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/generated/layers.txt CONTENT "${text}\n")
endfunction()
