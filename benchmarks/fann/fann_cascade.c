/* Train FANN's Cascade2 on one data file and report growth, timing and test predictions.
 *
 * usage: fann_cascade TRAIN TEST SEED MAX_NEURONS DESIRED_ERROR OUTPUT_ACTIVATION ERROR_FUNCTION OUTPUT_STEEPNESS
 *   TRAIN, TEST        FANN data files ("rows inputs outputs", then an input line and an output line per row)
 *   OUTPUT_ACTIVATION  a FANN_ACTIVATIONFUNC_NAMES entry, e.g. FANN_LINEAR
 *   ERROR_FUNCTION     FANN_ERRORFUNC_LINEAR or FANN_ERRORFUNC_TANH
 * Every other setting keeps FANN's default. Prints, one record a line:
 *   step HIDDEN TRAIN_MSE TEST_MSE EPOCHS   after each output phase of the growth loop (FANN's report)
 *   final HIDDEN TRAIN_MSE TEST_MSE
 *   seconds FIT_SECONDS                     cascade training only, without the reporting callback's own time
 *   pred Y1 [Y2 ...]                        one line per test row
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fann.h>

static struct fann_train_data *test_data;
static double callback_seconds;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static unsigned int hidden_units(struct fann *ann)
{
    return fann_get_total_neurons(ann) - fann_get_num_input(ann) - fann_get_num_output(ann) - 1;
}

/* MSE over a data set through fann_run only: fann_test_data would overwrite the MSE Cascade2 reads next. */
static double mse(struct fann *ann, struct fann_train_data *data)
{
    double sum = 0.0;
    unsigned int i, j, n_out = fann_num_output_train_data(data);
    for (i = 0; i < fann_length_train_data(data); i++) {
        fann_type *out = fann_run(ann, data->input[i]);
        for (j = 0; j < n_out; j++) {
            double d = (double) data->output[i][j] - (double) out[j];
            sum += d * d;
        }
    }
    return sum / ((double) fann_length_train_data(data) * n_out);
}

static int FANN_API report(struct fann *ann, struct fann_train_data *train, unsigned int max_neurons,
                           unsigned int neurons_between_reports, float desired_error, unsigned int epochs)
{
    double start = now();
    (void) train; (void) max_neurons; (void) neurons_between_reports; (void) desired_error;
    printf("step %u %.9g %.9g %u\n", hidden_units(ann), fann_get_MSE(ann), mse(ann, test_data), epochs);
    callback_seconds += now() - start;
    return 0;
}

static int lookup(const char *const names[], int count, const char *name)
{
    int i;
    for (i = 0; i < count; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    fprintf(stderr, "unknown name %s\n", name);
    exit(2);
}

int main(int argc, char **argv)
{
    struct fann_train_data *train;
    struct fann *ann;
    unsigned int i, j, n_activations = sizeof(FANN_ACTIVATIONFUNC_NAMES) / sizeof(FANN_ACTIVATIONFUNC_NAMES[0]);
    double start, seconds;

    if (argc != 9) {
        fprintf(stderr, "usage: %s TRAIN TEST SEED MAX_NEURONS DESIRED_ERROR OUTPUT_ACTIVATION ERROR_FUNCTION "
                        "OUTPUT_STEEPNESS\n", argv[0]);
        return 2;
    }
    train = fann_read_train_from_file(argv[1]);
    test_data = fann_read_train_from_file(argv[2]);
    if (train == NULL || test_data == NULL)
        return 1;

    ann = fann_create_shortcut(2, fann_num_input_train_data(train), fann_num_output_train_data(train));
    srand((unsigned int) strtoul(argv[3], NULL, 10));
    fann_randomize_weights(ann, -0.1f, 0.1f);
    fann_set_activation_function_output(
        ann, (enum fann_activationfunc_enum) lookup(FANN_ACTIVATIONFUNC_NAMES, n_activations, argv[6]));
    fann_set_train_error_function(ann, (enum fann_errorfunc_enum) lookup(FANN_ERRORFUNC_NAMES, 2, argv[7]));
    fann_set_activation_steepness_output(ann, (fann_type) atof(argv[8]));
    fann_set_callback(ann, report);

    start = now();
    fann_cascadetrain_on_data(ann, train, (unsigned int) strtoul(argv[4], NULL, 10), 1, (float) atof(argv[5]));
    seconds = now() - start - callback_seconds;

    printf("final %u %.9g %.9g\n", hidden_units(ann), mse(ann, train), mse(ann, test_data));
    printf("seconds %.6f\n", seconds);
    for (i = 0; i < fann_length_train_data(test_data); i++) {
        fann_type *out = fann_run(ann, test_data->input[i]);
        printf("pred");
        for (j = 0; j < fann_num_output_train_data(test_data); j++)
            printf(" %.9g", (double) out[j]);
        printf("\n");
    }
    fann_destroy(ann);
    fann_destroy_train(train);
    fann_destroy_train(test_data);
    return 0;
}
