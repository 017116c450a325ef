// Linked with the whole archive of one stage and only the stages below it (cmake/layers.cmake):
// if any object of the stage calls into a stage above, this program fails to link.
int main() { return 0; }
